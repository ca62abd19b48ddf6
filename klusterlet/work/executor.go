package work

import (
	"context"

	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/klusterlet/work/applied"
	"flotilla.dev/flotilla/klusterlet/work/apply"
	"flotilla.dev/flotilla/klusterlet/work/executor"
)

// applierFor returns the applier that writes one manifest: the agent's own
// for a work without spec.executor; otherwise, once the executor's rights on
// the object are confirmed (executor.Verbs), one that impersonates it. A
// refusal is an *executor.DeniedError, reported on that manifest alone.
func (r *reconciler) applierFor(ctx context.Context, e *workv1.ManifestWorkExecutor, t apply.Target, key applied.Key, strategy *workv1.UpdateStrategy, opt *workv1.DeleteOption) (*apply.Applier, error) {
	if e == nil {
		return r.applier, nil
	}
	sa, err := executor.ServiceAccount(e)
	if err != nil {
		return nil, err
	}
	meta := workv1.AppliedManifestResourceMeta{ResourceIdentifier: workv1.ResourceIdentifier{
		Group: key.Group, Resource: key.Resource, Namespace: key.Namespace, Name: key.Name}}
	if err := r.executors.Check(ctx, sa, t.GVR, t.Namespace, t.Name, executor.Verbs(strategy, !applied.Orphaned(meta, opt))); err != nil {
		return nil, err
	}
	user := executor.UserName(sa)
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.executorAppliers[user]; ok {
		return a, nil
	}
	c, err := r.executors.Client(sa)
	if err != nil {
		return nil, err
	}
	a := &apply.Applier{Client: c, Mapper: r.applier.Mapper}
	r.executorAppliers[user] = a
	return a, nil
}
