import fs from "node:fs";
import path from "node:path";
import Ajv from "ajv";
import { parseAllDocuments } from "yaml";

/**
 * Every Kubernetes document under k8s/ is validated against the Kubernetes
 * OpenAPI schema of its apiVersion and kind (the `kubernetes-models`
 * package's validators), and docker-compose.yml against the Compose
 * Specification's JSON schema, so a manifest a cluster or `docker compose`
 * would refuse fails the suite. test/fixtures/compose-spec.json is
 * schema/compose-spec.json of github.com/compose-spec/compose-spec at commit
 * 170098ba07d9f53c383a41bfd4c5166b0a4529a6 (Apache-2.0), kept byte for byte.
 */
const ROOT = path.resolve(__dirname, "../..");
const K8S = path.join(ROOT, "k8s");

type Doc = Record<string, any>;

/** Kustomize's own file is read by kubectl, never sent to the API server: no Kubernetes model describes it. */
const NOT_RESOURCES = new Set(["kustomize.config.k8s.io/v1beta1/Kustomization"]);

/** The problems Kubernetes' schema finds in a document, or one naming a kind no model describes. */
function k8sProblems(doc: Doc): string[] {
  const { apiVersion, kind } = doc;
  if (NOT_RESOURCES.has(`${apiVersion}/${kind}`)) return [];
  // "v1" is the core group, the package's `v1` folder; "apps/v1" and "networking.k8s.io/v1" are folders as named.
  let Model: new (data: Doc) => { validate(): void };
  try {
    Model = require(`kubernetes-models/${apiVersion}/${kind}`)[kind];
  } catch {
    return [`no Kubernetes model for ${apiVersion} ${kind}`];
  }
  try {
    new Model(doc).validate();
    return [];
  } catch (err) {
    return [(err as Error).message];
  }
}

/** Files under k8s/ that are not Kubernetes documents: Helm values for a chart users install themselves. */
const NOT_MANIFESTS = new Set(["queue-depth/prometheus-adapter-values.yaml"]);

/** Every YAML file under k8s/, its folders included, as a path relative to k8s/. */
function k8sFiles(dir = ""): string[] {
  return fs
    .readdirSync(path.join(K8S, dir), { withFileTypes: true })
    .flatMap((entry) => {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) return k8sFiles(file);
      return /\.ya?ml$/.test(entry.name) && !NOT_MANIFESTS.has(file) ? [file] : [];
    })
    .sort();
}

function k8sDocuments(): Array<{ file: string; doc: Doc }> {
  return k8sFiles()
    .flatMap((file) =>
      parseAllDocuments(fs.readFileSync(path.join(K8S, file), "utf8")).map((d) => {
        expect({ file, errors: d.errors }).toEqual({ file, errors: [] });
        return { file, doc: d.toJS() as Doc };
      }),
    )
    .filter(({ doc }) => doc);
}

/** The schema names draft 07 by its https address; Ajv knows the meta-schema by the http one. */
function composeValidator() {
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajv.addMetaSchema(
    require("ajv/dist/refs/json-schema-draft-07.json"),
    "https://json-schema.org/draft-07/schema",
  );
  return ajv.compile(JSON.parse(fs.readFileSync(path.join(ROOT, "test/fixtures/compose-spec.json"), "utf8")));
}
const compose = composeValidator();
// Merge keys (`<<: *service`) resolved, as docker compose reads them.
const composeFile = () =>
  parseAllDocuments(fs.readFileSync(path.join(ROOT, "docker-compose.yml"), "utf8"), {
    merge: true,
  })[0].toJS();

test("every document under k8s/ is valid for the Kubernetes schema of its kind", () => {
  const docs = k8sDocuments();
  expect(docs.length).toBeGreaterThan(10);
  for (const { file, doc } of docs) {
    const where = `${file}: ${doc.kind} ${doc.metadata?.name}`;
    expect({ where, problems: k8sProblems(doc) }).toEqual({ where, problems: [] });
  }
});

test("a broken manifest fails: a wrong type, a missing required field, an unknown kind", () => {
  const deployment = structuredClone(k8sDocuments().find(({ doc }) => doc.kind === "Deployment")!.doc);
  expect(k8sProblems(deployment)).toEqual([]);

  const wrongType = structuredClone(deployment);
  wrongType.spec.template.spec.containers[0].ports = [{ containerPort: "http" }];
  expect(k8sProblems(wrongType).join()).toMatch(/containerPort must be integer/);

  const noSelector = structuredClone(deployment);
  delete noSelector.spec.selector;
  expect(k8sProblems(noSelector).join()).toMatch(/selector/);

  expect(k8sProblems({ ...deployment, kind: "Deploymnet" })).toEqual([
    "no Kubernetes model for apps/v1 Deploymnet",
  ]);
});

test("docker-compose.yml is valid for the Compose Specification", () => {
  expect(compose(composeFile()) ? [] : compose.errors).toEqual([]);
});

test("a broken compose file fails", () => {
  const broken = composeFile();
  broken.services.api.ports = "3000:3000";
  broken.services.api.restart = { always: true };
  expect(compose(broken)).toBe(false);
  expect(compose.errors!.map((e) => e.instancePath)).toEqual(
    expect.arrayContaining(["/services/api/ports", "/services/api/restart"]),
  );
});
