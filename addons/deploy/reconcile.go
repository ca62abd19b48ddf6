package deploy

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/internal/ocm"
)

// Annotations on deploy works: the hash of the configs a work was rendered
// with, and of its spec as rendered (compared instead of the spec the
// apiserver returns, which carries defaults).
const (
	ConfigHashAnnotation = "addon.flotilla.dev/config-hash"
	SpecHashAnnotation   = "addon.flotilla.dev/spec-hash"
)

// Reconcile follows the skeleton: get, finalizer, then the phases configs,
// registration and manifests, each recording facts, and status computed from
// them.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var mca addonv1alpha1.ManagedClusterAddOn
	if err := r.Get(ctx, req.NamespacedName, &mca); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	addon, ok := r.registry.Get(mca.Name)
	if !ok {
		var err error
		if addon, ok, err = r.templateAddon(ctx, &mca); !ok {
			return ctrl.Result{}, err // another addon manager's
		}
		if err != nil {
			return ctrl.Result{}, r.templateFailed(ctx, &mca, err)
		}
	}
	if mca.DeletionTimestamp != nil {
		return r.finalize(ctx, &mca, addon)
	}
	if controllerutil.AddFinalizer(&mca, ocm.AddonPreDeleteHookFinalizer) {
		if err := r.Update(ctx, &mca); err != nil {
			return ctrl.Result{}, err
		}
	}
	var cluster clusterv1.ManagedCluster
	if err := r.Get(ctx, types.NamespacedName{Name: mca.Namespace}, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil // not a cluster namespace (or the cluster is going)
		}
		return ctrl.Result{}, err
	}
	var cma *addonv1alpha1.ClusterManagementAddOn
	var cmaObj addonv1alpha1.ClusterManagementAddOn
	if err := r.Get(ctx, types.NamespacedName{Name: mca.Name}, &cmaObj); err == nil {
		cma = &cmaObj
	} else if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	p := &pass{mca: &mca, cluster: &cluster, cma: cma, addon: addon, opts: addon.Options()}
	p.facts = Facts{Generation: mca.Generation, Registration: p.opts.Registration, Health: p.opts.HealthMode(), Probe: p.opts.Health.Probe}
	before := mca.Status.DeepCopy()
	r.configs(ctx, p)
	r.registration(ctx, p)
	r.manifests(ctx, p)
	p.status()
	if !reflect.DeepEqual(before, &mca.Status) {
		if err := r.Status().Update(ctx, &mca); err != nil && !apierrors.IsConflict(err) {
			p.errs = append(p.errs, err)
		}
	}
	return ctrl.Result{}, errors.Join(p.errs...)
}

// pass is one reconcile of a ManagedClusterAddOn: what its phases read, the
// facts they record for the conditions, and their errors. The phases run in
// order and write only mca.Status and the objects they own.
type pass struct {
	mca     *addonv1alpha1.ManagedClusterAddOn
	cluster *clusterv1.ManagedCluster
	cma     *addonv1alpha1.ClusterManagementAddOn // nil when there is none
	addon   framework.Addon
	opts    framework.Options
	facts   Facts
	errs    []error
	// cfg and render: the resolved configs, and whether the manifests may be
	// rendered with them (configs phase).
	cfg    resolved
	render bool
	// works: the deploy works as they are now, and the error of writing
	// them (manifests phase).
	works    []*workv1.ManifestWork
	worksErr error
}

// configs is the configs phase: the desired configs addons/install set, the
// install namespace, and what the status publishes of them.
func (r *Reconciler) configs(ctx context.Context, p *pass) {
	mca := p.mca
	cfg, err := r.resolveConfigs(ctx, mca)
	p.cfg = cfg
	p.facts.Pending = cfg.pending
	if err != nil {
		p.facts.Pending = err.Error()
	}
	p.render = err == nil && cfg.pending == ""
	if p.render || mca.Status.Namespace == "" {
		mca.Status.Namespace = firstOf(cfg.installNamespace, mca.Spec.InstallNamespace, ocm.DefaultAddonInstallNamespace)
	}
	mca.Status.SupportedConfigs = nil
	if p.cma != nil {
		for _, sc := range p.cma.Spec.SupportedConfigs {
			mca.Status.SupportedConfigs = append(mca.Status.SupportedConfigs, sc.ConfigGroupResource)
		}
	}
	mca.Status.RelatedObjects = []addonv1alpha1.ObjectReference{{Group: ocm.AddonGroup, Resource: "clustermanagementaddons", Name: mca.Name}}
	if p.facts.Health == framework.HealthLease {
		mca.Status.HealthCheck = addonv1alpha1.HealthCheck{Mode: addonv1alpha1.HealthCheckModeLease}
	} else {
		mca.Status.HealthCheck = addonv1alpha1.HealthCheck{Mode: addonv1alpha1.HealthCheckModeCustomized}
	}
}

// registration is the registration phase: the subject the agent's CSR
// publishes, and its hub rights granted (or taken back without a
// Registration).
func (r *Reconciler) registration(ctx context.Context, p *pass) {
	p.mca.Status.Registrations = Registrations(p.mca.Namespace, p.mca.Name, p.opts.Registration)
	if p.opts.Registration != nil {
		p.facts.PermissionErr = r.grant(ctx, p.mca, p.opts.Registration)
	} else if err := r.revoke(ctx, p.mca); err != nil {
		p.errs = append(p.errs, err)
	}
}

// manifests is the manifests phase: the deploy works rendered and written.
// A render error is a fact for the conditions; any other is the pass's.
func (r *Reconciler) manifests(ctx context.Context, p *pass) {
	works, err := r.deliver(ctx, p.mca, p.cluster, p.addon, p.opts, p.cfg, p.render)
	p.works, p.worksErr = works, err
	if err != nil {
		var re renderError
		if errors.As(err, &re) {
			p.facts.RenderErr = re.err
		} else {
			p.errs = append(p.errs, err)
		}
	}
	p.facts.Works = works
}

// status computes the conditions from the facts, and marks the configs
// applied once the works carrying them are applied and the agent is
// Available.
func (p *pass) status() {
	mca := p.mca
	p.facts.Existing = mca.Status.Conditions
	mca.Status.Conditions = Merge(mca.Status.Conditions, Conditions(p.facts))
	if p.worksErr == nil && p.facts.RenderErr == nil && Reflects(p.works, p.cfg.hash) &&
		meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable) {
		for i := range mca.Status.ConfigReferences {
			ref := &mca.Status.ConfigReferences[i]
			if ref.DesiredConfig != nil {
				ref.LastAppliedConfig = ref.DesiredConfig.DeepCopy()
			}
		}
	}
}

// Registrations is what a ManagedClusterAddOn publishes for its agent's CSR.
func Registrations(cluster, addon string, reg *framework.Registration) []addonv1alpha1.RegistrationConfig {
	if reg == nil {
		return nil
	}
	rc := addonv1alpha1.RegistrationConfig{
		SignerName: certificatesv1.KubeAPIServerClientSignerName,
		Subject: addonv1alpha1.Subject{
			User:   ocm.AddonAgentUser(cluster, addon, reg.DefaultAgentName(addon)),
			Groups: []string{ocm.AddonClusterGroup(cluster, addon), ocm.AddonGroupName(addon)},
		},
	}
	if reg.SignerName != "" && reg.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		rc.SignerName = reg.SignerName
		if reg.Subject != nil {
			rc.Subject = *reg.Subject.DeepCopy()
		}
	}
	return []addonv1alpha1.RegistrationConfig{rc}
}

// grant writes the Role and RoleBinding of the agent's hub rights, after checking them.
func (r *Reconciler) grant(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, reg *framework.Registration) error {
	rules := reg.Permissions
	err := CheckPermissions(rules)
	if err == nil {
		err = CheckBindings(mca.Namespace, reg.Bindings, r.isOtherCluster(ctx, mca.Namespace))
	}
	if err == nil {
		err = r.checkBound(ctx, mca.Namespace, reg.Bindings)
	}
	if err != nil {
		// Take back everything an earlier, acceptable registration granted.
		if rerr := r.revoke(ctx, mca); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	role, binding := Role(mca.Name, mca.Namespace, rules), RoleBinding(mca.Name, mca.Namespace)
	for _, o := range []client.Object{role, binding} {
		if err := controllerutil.SetOwnerReference(mca, o, r.Scheme()); err != nil {
			return err
		}
	}
	wantRules := role.Rules
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, role, func() error { role.Rules = wantRules; return nil }); err != nil {
		return fmt.Errorf("write Role %s/%s: %w", role.Namespace, role.Name, err)
	}
	wantSubjects := binding.Subjects
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, binding, func() error { binding.Subjects = wantSubjects; return nil }); err != nil {
		return fmt.Errorf("write RoleBinding %s/%s: %w", binding.Namespace, binding.Name, err)
	}
	return r.bind(ctx, mca, reg.Bindings)
}

type renderError struct{ err error }

func (e renderError) Error() string { return e.err.Error() }

// deliver renders the manifests and writes the deploy works, returning them as
// they are now. A render error keeps the works already delivered.
func (r *Reconciler) deliver(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, cluster *clusterv1.ManagedCluster,
	addon framework.Addon, opts framework.Options, cfg resolved, configsOK bool) ([]*workv1.ManifestWork, error) {
	configHash := cfg.hash
	existing, err := r.works(ctx, mca)
	if err != nil {
		return nil, err
	}
	if !configsOK {
		return existing, nil // keep what runs until the configs are back
	}
	rendered, err := safeRender(addon, cluster, mca, cfg.spec, r.limit, opts.Health.Probe)
	if err != nil {
		return existing, renderError{err}
	}
	byName := map[string]*workv1.ManifestWork{}
	for _, w := range existing {
		byName[w.Name] = w
	}
	var out []*workv1.ManifestWork
	var errs []error
	wanted := map[string]bool{}
	for _, w := range rendered.Deploy {
		wanted[w.Name] = true
		w.Annotations = map[string]string{SpecHashAnnotation: SpecHash(w.Spec)[:16]}
		if configHash != "" {
			w.Annotations[ConfigHashAnnotation] = configHash
			w.Annotations[workv1.ManifestConfigSpecHashAnnotationKey] = cfg.configSpecHashAnnotation()
		}
		if err := controllerutil.SetOwnerReference(mca, w, r.Scheme()); err != nil {
			return existing, err
		}
		cur := byName[w.Name]
		switch {
		case cur == nil:
			if err := r.Create(ctx, w); err != nil {
				errs = append(errs, fmt.Errorf("create ManifestWork %s/%s: %w", w.Namespace, w.Name, err))
				continue
			}
			cur = w
		case cur.Annotations[SpecHashAnnotation] != w.Annotations[SpecHashAnnotation] || cur.Annotations[ConfigHashAnnotation] != configHash:
			upd := cur.DeepCopy()
			upd.Spec, upd.Labels, upd.Annotations = w.Spec, w.Labels, w.Annotations
			upd.OwnerReferences = w.OwnerReferences
			if err := r.Update(ctx, upd); err != nil {
				errs = append(errs, fmt.Errorf("update ManifestWork %s/%s: %w", w.Namespace, w.Name, err))
				continue
			}
			cur = upd
		}
		out = append(out, cur)
	}
	for _, w := range existing {
		if !wanted[w.Name] && isDeployWork(mca.Name, w.Name) && w.DeletionTimestamp == nil {
			if err := client.IgnoreNotFound(r.Delete(ctx, w)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return out, errors.Join(errs...)
}

// Reflects reports whether works are all applied and were rendered with the
// configs whose combined hash is configHash.
func Reflects(works []*workv1.ManifestWork, configHash string) bool {
	if applied, _, _, _ := workState(works); !applied {
		return false
	}
	for _, w := range works {
		if w.Annotations[ConfigHashAnnotation] != configHash {
			return false
		}
	}
	return true
}

// safeRender calls the addon's Manifests, turning a panic into an error so one
// broken addon cannot stop the manager.
func safeRender(addon framework.Addon, cluster *clusterv1.ManagedCluster, mca *addonv1alpha1.ManagedClusterAddOn,
	cfg *addonv1alpha1.AddOnDeploymentConfigSpec, limit int, probe *framework.Probe) (out Rendered, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the addon's Manifests panicked: %v", p)
		}
	}()
	var objs []runtime.Object
	if c, ok := addon.(framework.Configurable); ok {
		objs, err = c.ManifestsWithConfig(cluster.DeepCopy(), mca.DeepCopy(), cfg)
	} else {
		objs, err = addon.Manifests(cluster.DeepCopy(), mca.DeepCopy())
	}
	if err != nil {
		return out, err
	}
	return Render(mca.Name, mca.Namespace, objs, limit, probe)
}

func isDeployWork(addon, name string) bool {
	i, ok := strings.CutPrefix(name, "addon-"+addon+"-deploy-")
	if !ok {
		return false
	}
	_, err := strconv.Atoi(i)
	return err == nil
}

// works lists the addon's deploy works in the cluster namespace.
func (r *Reconciler) works(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) ([]*workv1.ManifestWork, error) {
	var list workv1.ManifestWorkList
	if err := r.List(ctx, &list, client.InNamespace(mca.Namespace), client.MatchingLabels{ocm.AddonNameLabel: mca.Name}); err != nil {
		return nil, err
	}
	var out []*workv1.ManifestWork
	for i := range list.Items {
		if isDeployWork(mca.Name, list.Items[i].Name) {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// finalize runs the pre-delete hook (when the addon has one), then removes the
// works and the agent's rights, then the finalizer.
func (r *Reconciler) finalize(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, addon framework.Addon) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(mca, ocm.AddonPreDeleteHookFinalizer) {
		return ctrl.Result{}, nil
	}
	logger := log.FromContext(ctx)
	hookKey := types.NamespacedName{Namespace: mca.Namespace, Name: ocm.AddonPreDeleteWorkName(mca.Name)}
	var cluster clusterv1.ManagedCluster
	clusterErr := r.Get(ctx, types.NamespacedName{Name: mca.Namespace}, &cluster)
	if clusterErr == nil && cluster.DeletionTimestamp == nil {
		var hook workv1.ManifestWork
		err := r.Get(ctx, hookKey, &hook)
		switch {
		case apierrors.IsNotFound(err):
			cfg, _ := r.resolveConfigs(ctx, mca)
			rendered, rerr := safeRender(addon, &cluster, mca, cfg.spec, r.limit, nil)
			if rerr != nil {
				logger.Info("pre-delete hook not run: the addon's manifests do not render", "error", rerr.Error())
			} else if rendered.PreDelete != nil {
				if err := controllerutil.SetOwnerReference(mca, rendered.PreDelete, r.Scheme()); err != nil {
					return ctrl.Result{}, err
				}
				if err := r.Create(ctx, rendered.PreDelete); err != nil && !apierrors.IsAlreadyExists(err) {
					return ctrl.Result{}, fmt.Errorf("create pre-delete hook work: %w", err)
				}
				logger.Info("pre-delete hook delivered; removal waits for it to complete")
				return ctrl.Result{RequeueAfter: hookRecheck}, nil
			}
		case err != nil:
			return ctrl.Result{}, err
		case !HookDone(&hook):
			return ctrl.Result{RequeueAfter: hookRecheck}, nil
		}
	}
	works, err := r.works(ctx, mca)
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, w := range works {
		if err := client.IgnoreNotFound(r.Delete(ctx, w)); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := client.IgnoreNotFound(r.Delete(ctx, &workv1.ManifestWork{ObjectMeta: metaOf(hookKey)})); err != nil {
		return ctrl.Result{}, err
	}
	for _, o := range []client.Object{RoleBinding(mca.Name, mca.Namespace), Role(mca.Name, mca.Namespace, nil)} {
		if err := client.IgnoreNotFound(r.Delete(ctx, o)); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.bind(ctx, mca, nil); err != nil {
		return ctrl.Result{}, err
	}
	if len(works) > 0 {
		return ctrl.Result{}, nil // their deletion events bring us back
	}
	controllerutil.RemoveFinalizer(mca, ocm.AddonPreDeleteHookFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Update(ctx, mca))
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// revoke removes every hub right granted to addon's agent on its cluster: the
// Role and RoleBinding of its declared permissions and its extra bindings.
func (r *Reconciler) revoke(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) error {
	errs := []error{
		client.IgnoreNotFound(r.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: RoleBinding(mca.Name, mca.Namespace).ObjectMeta})),
		client.IgnoreNotFound(r.Delete(ctx, &rbacv1.Role{ObjectMeta: Role(mca.Name, mca.Namespace, nil).ObjectMeta})),
		r.bind(ctx, mca, nil),
	}
	return errors.Join(errs...)
}

// GrantLabel on a hub namespace lets addon agents be granted rights there
// (AddOnTemplate SingleNamespace hubPermissions, Go addons' bindings): an
// admin opts a namespace in; a cluster's own namespace needs no label.
const GrantLabel = "addon.flotilla.dev/hub-permissions"

// checkBound reads, from the apiserver (never a cache), each namespace and role
// the bindings name: a namespace other than the cluster's own must be opted in
// with GrantLabel and must not be a cluster namespace; the role must be
// grantable (CheckGrantable).
func (r *Reconciler) checkBound(ctx context.Context, cluster string, bindings []framework.RoleBinding) error {
	for i, b := range bindings {
		ns := b.Namespace
		if ns == "" {
			ns = cluster
		}
		if ns != cluster {
			var n corev1.Namespace
			if err := r.reader.Get(ctx, types.NamespacedName{Name: ns}, &n); err != nil {
				return fmt.Errorf("hub permission %d: namespace %s: %w", i, ns, err)
			}
			if n.Labels[ocm.ClusterNameLabel] != "" {
				return fmt.Errorf("hub permission %d names namespace %s, a managed cluster's: an addon agent of cluster %s gets no rights there", i, ns, cluster)
			}
			if n.Labels[GrantLabel] != "true" {
				return fmt.Errorf("hub permission %d names namespace %s, which is not open to addon agents: an admin opts it in with label %s=true", i, ns, GrantLabel)
			}
		}
		if why := protectedRole(b.RoleRef.Kind, b.RoleRef.Name); why != "" {
			return fmt.Errorf("hub permission %d: %s: an addon agent may not hold it", i, why)
		}
		var rules []rbacv1.PolicyRule
		switch b.RoleRef.Kind {
		case "ClusterRole":
			var cr rbacv1.ClusterRole
			if err := r.reader.Get(ctx, types.NamespacedName{Name: b.RoleRef.Name}, &cr); err != nil {
				return fmt.Errorf("hub permission %d: ClusterRole %s: %w", i, b.RoleRef.Name, err)
			}
			if cr.AggregationRule != nil {
				return fmt.Errorf("hub permission %d: ClusterRole %s aggregates other roles: its rights can grow behind the check; bind a plain role", i, b.RoleRef.Name)
			}
			rules = cr.Rules
		default:
			var role rbacv1.Role
			if err := r.reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: b.RoleRef.Name}, &role); err != nil {
				return fmt.Errorf("hub permission %d: Role %s/%s: %w", i, ns, b.RoleRef.Name, err)
			}
			rules = role.Rules
		}
		if err := CheckGrantable(b.RoleRef.Kind, b.RoleRef.Name, rules); err != nil {
			return fmt.Errorf("hub permission %d: %w", i, err)
		}
	}
	return nil
}
