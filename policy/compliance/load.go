package compliance

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/propagator"
)

// Load reads every Policy on the hub the reader may list (roots in their
// namespaces, replicas in cluster namespaces) and builds the report at now.
func Load(ctx context.Context, c client.Reader, f Filter, now time.Time) (*Report, error) {
	in, err := Read(ctx, c)
	if err != nil {
		return nil, err
	}
	in.Now = now
	return Build(in, f), nil
}

// Read lists the hub's policies and splits them into roots and replicas.
func Read(ctx context.Context, c client.Reader) (Input, error) {
	var list policyv1.PolicyList
	if err := c.List(ctx, &list); err != nil {
		return Input{}, fmt.Errorf("list policies in all namespaces of the hub: %w", err)
	}
	var in Input
	for _, p := range list.Items {
		if propagator.IsReplica(&p) {
			in.Replicas = append(in.Replicas, p)
		} else {
			in.Roots = append(in.Roots, p)
		}
	}
	return in, nil
}
