// Package generator reads PolicyGenerator configurations
// (policy.open-cluster-management.io/v1, kind PolicyGenerator: the format of
// OCM's policy-generator kustomize plugin and of policy-collection's policy
// sets) and turns them into the hub objects they describe: Policies,
// PolicySets, Placements and PlacementBindings, the same objects upstream's
// generator writes for the same configuration.
//
// The design is three steps, I/O only in the middle one:
//
//   - Parse decodes a configuration strictly (an unknown field is an error that
//     names the field, its section and the line) and Resolve applies
//     policyDefaults and policySetDefaults to every policy, manifest and policy
//     set, then checks the result (both pure);
//   - Load reads what the configuration points at: manifest files, flat
//     directories, kustomize directories (built with sigs.k8s.io/kustomize/api),
//     patches, and placementPath files, all confined to the configuration's
//     directory tree;
//   - Generate, pure again, builds the objects from the loaded configuration:
//     the policy templates (consolidated or one ConfigurationPolicy per
//     manifest, policy-type manifests kept as they are, Gatekeeper and Kyverno
//     inform templates), the Policy metadata and spec, the policy sets, the
//     placements (shared when policies select the same clusters under a
//     default placement name) and one binding per placement.
//
// File is the steps in a row for one configuration file (the CLI and the
// kustomize exec plugin entry point). Kustomize builds a kustomization
// directory as `kustomize build --enable-alpha-plugins` does with the
// generator as its plugin: the PolicyGenerator configurations it lists under
// generators are generated here, and kustomize builds the rest around them.
// Paths is what `flotilla policy generate PATH...` runs.
//
// The goldens in testdata are upstream's output for the same inputs
// (testdata/README.md says how they were recorded).
package generator
