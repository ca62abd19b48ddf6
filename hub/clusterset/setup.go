package clusterset

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"flotilla.dev/flotilla/hub/clusterset/bindings"
	"flotilla.dev/flotilla/hub/clusterset/sets"
)

// Setup registers the ManagedClusterSet and ManagedClusterSetBinding controllers
// and the binding admission handler on mgr's webhook server.
func Setup(mgr ctrl.Manager) error {
	if err := sets.Setup(mgr); err != nil {
		return err
	}
	return bindings.Setup(mgr)
}
