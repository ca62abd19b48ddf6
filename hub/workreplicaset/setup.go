package workreplicaset

import ctrl "sigs.k8s.io/controller-runtime"

// Options configures the ManifestWorkReplicaSet controller. Every field documents its default.
type Options struct{}

// Setup registers the controller with mgr.
func Setup(mgr ctrl.Manager, opts Options) error { return nil }
