package propagator

import (
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// SecretWatches exposes secretWatches to the tests.
type SecretWatches = secretWatches

// NewSecretWatches is newSecretWatches, for the tests.
func NewSecretWatches(c metadata.Interface) *SecretWatches { return newSecretWatches(c) }

// Events is where the watches send changed Secrets.
func (s *secretWatches) Events() <-chan event.GenericEvent { return s.events }
