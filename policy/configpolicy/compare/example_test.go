package compare_test

import (
	"fmt"

	"sigs.k8s.io/yaml"

	"flotilla.dev/flotilla/policy/configpolicy/compare"
)

func decode(y string) map[string]any {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		panic(err)
	}
	return m
}

// A MustHave template names only what matters: the live Deployment's other
// fields and containers stay, the container named "web" gets the new image.
func ExampleObject() {
	template := decode(`
kind: Deployment
spec:
  template:
    spec:
      containers:
      - {name: web, image: "nginx:1.27", resources: {limits: {memory: 1Gi}}}`)
	live := decode(`
kind: Deployment
spec:
  replicas: 3
  template:
    spec:
      containers:
      - {name: sidecar, image: "envoy:1.30"}
      - {name: web, image: "nginx:1.25", resources: {limits: {memory: 1024Mi}}}`)

	r := compare.Object(template, live, compare.Options{Mode: compare.MustHave})
	fmt.Println("match:", r.Match)
	fmt.Println("mismatches:", r.Mismatches)
	out, _ := yaml.Marshal(r.Merged["spec"])
	fmt.Print(string(out))
	// Output:
	// match: false
	// mismatches: [spec.template.spec.containers[name=web].image]
	// replicas: 3
	// template:
	//   spec:
	//     containers:
	//     - image: envoy:1.30
	//       name: sidecar
	//     - image: nginx:1.27
	//       name: web
	//       resources:
	//         limits:
	//           memory: 1024Mi
}
