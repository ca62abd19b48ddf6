package sets

import "sigs.k8s.io/controller-runtime/pkg/event"

type eventUpdate = event.UpdateEvent

func equalLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
