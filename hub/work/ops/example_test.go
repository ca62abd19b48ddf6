package ops_test

import (
	"fmt"
	"strings"

	"flotilla.dev/flotilla/hub/work/ops"
)

// Decode and Spec build what `flotilla create work` sends: the manifests of
// a YAML stream, and a ManifestWork spec with the options the flags set.
func ExampleSpec() {
	manifests, err := ops.Decode(strings.NewReader(`apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: default}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: busybox}]
`), "job.yaml")
	if err != nil {
		panic(err)
	}
	ttl := int64(600)
	spec, err := ops.Spec(manifests, ops.SpecOptions{TTLAfterFinished: &ttl, WellKnownConditions: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(spec.Workload.Manifests), "manifest; delete", *spec.DeleteOption.TTLSecondsAfterFinished, "s after Complete")
	for _, c := range spec.ManifestConfigs {
		for _, rule := range c.ConditionRules {
			fmt.Println(c.ResourceIdentifier.Resource, c.ResourceIdentifier.Name, rule.Type, rule.Condition)
		}
	}

	_, err = ops.Spec(manifests, ops.SpecOptions{Executor: "no-slash"})
	fmt.Println(err)
	// Output:
	// 1 manifest; delete 600 s after Complete
	// jobs migrate WellKnownConditions Complete
	// jobs migrate WellKnownConditions Degraded
	// --executor "no-slash": want NAMESPACE/NAME of a ServiceAccount on the managed cluster
}
