import {
  cleanFileName,
  contentDisposition,
  downloadHeaders,
  headCollector,
  requestedRange,
  sniffContentType,
  SNIFF_BYTES,
} from "../../services/content/asset-file";

/** Asset files: the type read from the bytes, file names made safe, the download's headers. */

const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489", "hex");
const PDF = Buffer.from("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n", "latin1");
const ZIP = Buffer.from("504b0304140000000800", "hex");

describe("sniffContentType", () => {
  test.each([
    ["a PNG", PNG, "image/png"],
    ["a PDF", PDF, "application/pdf"],
    ["a GIF", Buffer.from("GIF89a\x01\x00\x01\x00\x00\x00\x00;", "latin1"), "image/gif"],
    ["a JPEG", Buffer.from("ffd8ffe000104a46494600010100000100010000", "hex"), "image/jpeg"],
  ])("%s is typed by its signature", async (_name, bytes, type) => {
    expect(await sniffContentType(bytes, true)).toBe(type);
  });

  test("HTML or SVG sent as an image is plain text: what it declared is never taken", async () => {
    expect(await sniffContentType(Buffer.from("<script>alert(1)</script>"), true)).toBe(
      "text/plain; charset=utf-8",
    );
    expect(await sniffContentType(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'), true)).not.toBe(
      "image/svg+xml",
    );
  });

  test("UTF-8 text is text, cut characters at the end of a partial head included; binary without a signature is octet-stream", async () => {
    expect(await sniffContentType(Buffer.from("name,city\nÅsa,Tromsø\n"), true)).toBe(
      "text/plain; charset=utf-8",
    );
    const cut = Buffer.from("a".repeat(10) + "ø").subarray(0, 11); // the first byte of ø only
    expect(await sniffContentType(cut, false)).toBe("text/plain; charset=utf-8");
    expect(await sniffContentType(cut, true)).toBe("application/octet-stream");
    expect(await sniffContentType(Buffer.from([0x00, 0x01, 0x02, 0xff, 0x10]), true)).toBe(
      "application/octet-stream",
    );
    expect(await sniffContentType(Buffer.from("tab\tand\r\nform\ffeed"), true)).toBe(
      "text/plain; charset=utf-8",
    );
    expect(await sniffContentType(Buffer.alloc(0), true)).toBe("application/octet-stream");
  });

  test("a ZIP is a ZIP whatever its name says", async () => {
    expect(await sniffContentType(ZIP, true)).toBe("application/zip");
  });
});

test("headCollector keeps the first SNIFF_BYTES and counts every byte", () => {
  const head = headCollector();
  head.take(Buffer.alloc(3000, 1));
  head.take(Buffer.alloc(3000, 2));
  head.take(Buffer.alloc(10, 3));
  expect(head.size).toBe(6010);
  expect(head.head.length).toBe(SNIFF_BYTES);
  expect(head.head[2999]).toBe(1);
  expect(head.head[3000]).toBe(2);
});

test.each([
  ["report.pdf", "report.pdf"],
  ["../../etc/passwd", "passwd"],
  ["C:\\Users\\me\\photo.png", "photo.png"],
  ["bad\u0000name\r\n.txt", "badname.txt"],
  ["..", null],
  ["   ", null],
  [null, null],
  ["x".repeat(300), "x".repeat(255)],
])("cleanFileName(%j) is %j", (name, clean) => {
  expect(cleanFileName(name)).toBe(clean);
});

test("Content-Disposition carries an ASCII fallback and the UTF-8 name (RFC 6266, 8187)", () => {
  expect(contentDisposition('Prices "2026" (draft).pdf', false)).toBe(
    `attachment; filename="Prices _2026_ (draft).pdf"; filename*=UTF-8''Prices%20%222026%22%20%28draft%29.pdf`,
  );
  expect(contentDisposition("Tromsø.png", true)).toBe(
    `inline; filename="Troms_.png"; filename*=UTF-8''Troms%C3%B8.png`,
  );
});

test("downloads: raster images inline, anything else an attachment; never sniffed, never a page of ours", () => {
  const image = downloadHeaders({ fileName: "a.png", contentType: "image/png", size: 10 });
  expect(image["Content-Disposition"]).toMatch(/^inline;/);
  const page = downloadHeaders({ fileName: "a.html", contentType: "text/plain; charset=utf-8", size: 5 });
  expect(page).toMatchObject({
    "Content-Type": "text/plain; charset=utf-8",
    "Content-Length": "5",
    "X-Content-Type-Options": "nosniff",
  });
  expect(page["Content-Disposition"]).toMatch(/^attachment;/);
  expect(page["Content-Security-Policy"]).toContain("sandbox");
  expect(
    downloadHeaders({ fileName: "a.svg", contentType: "image/svg+xml", size: 1 })["Content-Disposition"],
  ).toMatch(/^attachment;/);
});

test.each([
  ["no header", undefined, null],
  ["the first 100 bytes", "bytes=0-99", { start: 0, end: 99 }],
  ["from 500 to the end", "bytes=500-", { start: 500, end: 999 }],
  ["the last 10 bytes", "bytes=-10", { start: 990, end: 999 }],
  ["an end past the file, cut to it", "bytes=900-5000", { start: 900, end: 999 }],
  ["a start past the file", "bytes=1000-1100", "unsatisfiable"],
  ["two ranges (served whole)", "bytes=0-9,500-509", null],
  ["two touching ranges, combined", "bytes=0-9,10-19", { start: 0, end: 19 }],
  ["another unit", "items=0-9", null],
  ["no range at all (as express answers it)", "bytes=abc", "unsatisfiable"],
  ["a header that is not a range", "bytes", null],
])("a Range of %s on 1,000 bytes", (_name, header, range) => {
  expect(requestedRange(header, 1000)).toEqual(range);
});

test("a part's headers: 206's Content-Range and its length; every download says ranges are accepted", () => {
  const file = { fileName: "a.pdf", contentType: "application/pdf", size: 1000 };
  expect(downloadHeaders(file, { start: 100, end: 199 })).toMatchObject({
    "Content-Length": "100",
    "Content-Range": "bytes 100-199/1000",
    "Accept-Ranges": "bytes",
  });
  expect(downloadHeaders(file)).not.toHaveProperty("Content-Range");
});
