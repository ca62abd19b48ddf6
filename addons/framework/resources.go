package framework

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// resourceTypes are the kinds an AddOnDeploymentConfig's containerID names, by
// the resource type it writes for them.
var resourceTypes = map[string]string{
	"Deployment": "deployments", "DaemonSet": "daemonsets", "StatefulSet": "statefulsets",
	"ReplicaSet": "replicasets", "Job": "jobs", "CronJob": "cronjobs", "Pod": "pods",
}

// ResourcesFor returns the resource requirements an AddOnDeploymentConfig
// sets for one container of an agent workload (kind, workload name,
// container name), as OCM reads `resourceRequirements`: a containerID is
// `{resource_type}:{resource_name}:{container_name}`, each part a name or a
// pattern with `*`, and when several match, the last one in the list wins.
// false: none matches (the container keeps its own).
func ResourcesFor(kind, name, container string, reqs []addonv1alpha1.ContainerResourceRequirements) (corev1.ResourceRequirements, bool) {
	typ, ok := resourceTypes[kind]
	if !ok {
		return corev1.ResourceRequirements{}, false
	}
	var found corev1.ResourceRequirements
	matched := false
	for _, r := range reqs {
		parts := strings.SplitN(r.ContainerID, ":", 3)
		if len(parts) != 3 {
			continue // the CRD's pattern refuses it; nothing to match
		}
		if matchPart(parts[0], typ) && matchPart(parts[1], name) && matchPart(parts[2], container) {
			found, matched = r.Resources, true
		}
	}
	return found, matched
}

func matchPart(pattern, value string) bool {
	ok, err := path.Match(pattern, value)
	return err == nil && ok
}
