package dryrun

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/certpolicy"
	"flotilla.dev/flotilla/policy/configpolicy"
	"flotilla.dev/flotilla/policy/configpolicy/evaluate"
	"flotilla.dev/flotilla/policy/gatekeeper"
)

// Options for Run.
type Options struct {
	// PolicyFile is the file holding the policies ("-" for standard input). Required.
	PolicyFile string
	// From are the files and folders holding the cluster's objects. Default:
	// none (an empty cluster).
	From []string
	// Cluster, when set, is a live cluster to read the objects from instead
	// of From. Nothing is written to it: updates are checked with a
	// server-side dry-run. Default nil.
	Cluster *rest.Config
	// Stdin is read for "-". Default: nothing.
	Stdin io.Reader
	// Now is the evaluation time written to lastEvaluated. Default: time.Now.
	Now func() time.Time
}

// Report is the outcome of a dry run.
type Report struct {
	// Warnings name what was skipped or ignored in the policy file.
	Warnings []string       `json:"warnings,omitempty"`
	Policies []PolicyReport `json:"policies"`
	// Constraints are the Gatekeeper constraints (and templates that do
	// not compile), audited by Flotilla's Rego engine.
	Constraints []ConstraintReport `json:"constraints,omitempty"`
	// Certificates are the CertificatePolicies' evaluations.
	Certificates []CertificateReport `json:"certificatePolicies,omitempty"`
}

// CertificateReport is one CertificatePolicy's evaluation.
type CertificateReport struct {
	Name      string                           `json:"name"`
	Namespace string                           `json:"namespace,omitempty"`
	Status    policyv1.CertificatePolicyStatus `json:"status"`
	// Message is the compliance event text ("NonCompliant; 1 certificates expire ...").
	Message string `json:"message"`
}

// Compliant is true when every policy and constraint is Compliant.
func (r *Report) Compliant() bool {
	return r.NonCompliant() == 0
}

// NonCompliant counts the policies and constraints that are not Compliant.
func (r *Report) NonCompliant() int {
	n := 0
	for _, p := range r.Policies {
		if p.Status.ComplianceState != policyv1.Compliant {
			n++
		}
	}
	for _, c := range r.Constraints {
		if c.ComplianceState != policyv1.Compliant {
			n++
		}
	}
	for _, c := range r.Certificates {
		if c.Status.ComplianceState != policyv1.Compliant {
			n++
		}
	}
	return n
}

// ConstraintReport is one Gatekeeper constraint's audit, or a
// ConstraintTemplate that does not compile (Name "ConstraintTemplate/NAME").
type ConstraintReport struct {
	// Name is "Kind/name".
	Name              string                       `json:"name"`
	EnforcementAction string                       `json:"enforcementAction,omitempty"`
	ComplianceState   policyv1.ComplianceState     `json:"compliant"`
	Message           string                       `json:"message"`
	Audited           int                          `json:"audited"`
	Violations        []gatekeeper.ObjectViolation `json:"violations,omitempty"`
}

// PolicyReport is one policy's evaluation.
type PolicyReport struct {
	Name              string                             `json:"name"`
	Namespace         string                             `json:"namespace,omitempty"`
	RemediationAction policyv1.RemediationAction         `json:"remediationAction"`
	Status            policyv1.ConfigurationPolicyStatus `json:"status"`
	// Message is the compliance event text ("NonCompliant; violation - ...").
	Message string `json:"message"`
	// Actions are what enforce would do.
	Actions []Action `json:"enforceActions,omitempty"`
	// Dropped says what the status left out of its related objects to stay
	// within evaluate.RelatedBudget (empty when nothing).
	Dropped string `json:"relatedObjectsLeftOut,omitempty"`

	result *evaluate.Result
}

// Action is one change enforce would make.
type Action struct {
	Verb       evaluate.Verb  `json:"verb"`
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Namespace  string         `json:"namespace,omitempty"`
	Name       string         `json:"name"`
	Mismatches []string       `json:"mismatches,omitempty"`
	Diff       string         `json:"diff,omitempty"`
	Object     map[string]any `json:"object,omitempty"`
}

// Run reads the policies and objects and evaluates every policy.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.PolicyFile == "" {
		return nil, fmt.Errorf("no policy file: pass -f policy.yaml")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PolicyFile == "-" {
		for _, f := range opts.From {
			if f == "-" {
				return nil, fmt.Errorf("standard input can hold the policies or the objects, not both")
			}
		}
	}
	in, err := ReadInput(opts.Stdin, opts.PolicyFile)
	if err != nil {
		return nil, err
	}
	policies, warnings := in.Policies, in.Warnings
	var cluster evaluate.Cluster
	var live *configpolicy.Live
	var objects []*unstructured.Unstructured
	if opts.Cluster != nil {
		if len(opts.From) > 0 {
			return nil, fmt.Errorf("give either a cluster or --from files, not both")
		}
		if len(in.Templates)+len(in.Constraints) > 0 {
			return nil, fmt.Errorf("%s holds Gatekeeper ConstraintTemplates or constraints: dryrun audits them against --from files; on a cluster, `flotilla policy run` audits them", opts.PolicyFile)
		}
		if live, err = configpolicy.NewLive(ctx, opts.Cluster); err != nil {
			return nil, err
		}
		cluster = live
	} else {
		objs, err := ReadObjects(opts.Stdin, opts.From...)
		if err != nil {
			return nil, err
		}
		held, err := evaluate.NewObjects(withDefaultNamespace(objs)...)
		if err != nil {
			return nil, fmt.Errorf("objects: %w", err)
		}
		// Gatekeeper audits the objects given, as gator does: no
		// namespace default of ours among them.
		cluster, objects = held, withoutAddedDefault(held.All(), objs)
	}
	rep := &Report{Warnings: warnings}
	if len(in.Templates)+len(in.Constraints) > 0 {
		if rep.Constraints, err = audit(ctx, in.Templates, in.Constraints, objects); err != nil {
			return nil, err
		}
	}
	for _, p := range in.Certificates {
		cr, err := checkCertificates(p, cluster, opts.Now())
		if err != nil {
			return nil, err
		}
		rep.Certificates = append(rep.Certificates, cr)
	}
	for _, p := range policies {
		// As upstream's dry run: evaluated once, not on changes, so
		// customMessage sees related objects' identifiers only and no
		// "never" note is added.
		p.Spec.EvaluationInterval = policyv1.EvaluationInterval{Compliant: "10s", NonCompliant: "10s"}
		res := evaluate.Policy(p, cluster)
		if live != nil {
			configpolicy.ConfirmMismatches(ctx, live.Dynamic(), res, "flotilla-policy-dryrun", logr.Discard())
		}
		pr := PolicyReport{
			Name: p.Name, Namespace: p.Namespace, RemediationAction: p.Spec.RemediationAction,
			Status: res.Status(nil, opts.Now()), result: res,
		}
		pr.Message = res.ComplianceMessage(pr.Status, false)
		pr.Dropped = res.Dropped().String()
		for _, f := range res.Actions() {
			a := Action{
				Verb: f.Action, APIVersion: f.Mapping.GVK.GroupVersion().String(), Kind: f.Mapping.GVK.Kind,
				Namespace: f.Namespace, Name: f.Name, Mismatches: f.Mismatches, Diff: f.Diff,
			}
			if f.Action == evaluate.Create {
				a.Object = f.Desired.Object
			}
			pr.Actions = append(pr.Actions, a)
		}
		rep.Policies = append(rep.Policies, pr)
	}
	return rep, nil
}

// Exit codes of `flotilla policy dryrun`.
const (
	ExitCompliant    = 0
	ExitError        = 1
	ExitNonCompliant = 2
)

// ExitCode maps a dry run's outcome to its exit code.
func ExitCode(rep *Report, err error) int {
	switch {
	case err != nil:
		return ExitError
	case rep.Compliant():
		return ExitCompliant
	default:
		return ExitNonCompliant
	}
}

// audit runs the Gatekeeper constraints against objects: templates that do
// not compile and constraints that do not parse are NonCompliant entries
// with the error as message.
func audit(ctx context.Context, templates, constraints, objects []*unstructured.Unstructured) ([]ConstraintReport, error) {
	e := gatekeeper.NewEngine()
	if err := e.Inventory().Replace(ctx, objects); err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	var out []ConstraintReport
	broken := map[string]bool{}
	for _, t := range templates {
		if _, err := e.AddTemplate(ctx, t); err != nil {
			broken[t.GetName()] = true
			out = append(out, ConstraintReport{Name: "ConstraintTemplate/" + t.GetName(), ComplianceState: policyv1.NonCompliant, Message: err.Error()})
		}
	}
	var parsed []*gatekeeper.Constraint
	for _, c := range constraints {
		pc, err := gatekeeper.ParseConstraint(c)
		if err != nil {
			out = append(out, ConstraintReport{Name: c.GetKind() + "/" + c.GetName(), ComplianceState: policyv1.NonCompliant, Message: err.Error()})
			continue
		}
		parsed = append(parsed, pc)
	}
	snap, err := gatekeeper.Snapshot(objects)
	if err != nil {
		return nil, err
	}
	for _, r := range e.Audit(ctx, parsed, snap) {
		state, msg := r.Compliance()
		out = append(out, ConstraintReport{
			Name: r.Constraint, EnforcementAction: r.Action, ComplianceState: state, Message: msg,
			Audited: r.Audited, Violations: r.Violations,
		})
	}
	return out, nil
}

// withDefaultNamespace adds Namespace default (labelled as the apiserver
// labels it) to objs unless they hold it:
// every cluster has it, and an input object without a namespace is put in it,
// so a namespaceSelector sees it even when the input names no Namespace (as
// upstream's dryrun does).
func withDefaultNamespace(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	if slices.ContainsFunc(objs, isDefaultNamespace) {
		return objs
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(metav1.NamespaceDefault)
	// The label the apiserver puts on every namespace.
	ns.SetLabels(map[string]string{corev1.LabelMetadataName: metav1.NamespaceDefault})
	return append(slices.Clone(objs), ns)
}

// withoutAddedDefault drops from all the Namespace default that
// withDefaultNamespace added to given (none when given held it).
func withoutAddedDefault(all, given []*unstructured.Unstructured) []*unstructured.Unstructured {
	if slices.ContainsFunc(given, isDefaultNamespace) {
		return all
	}
	return slices.DeleteFunc(slices.Clone(all), isDefaultNamespace)
}

func isDefaultNamespace(o *unstructured.Unstructured) bool {
	return o.GetKind() == "Namespace" && o.GroupVersionKind().Group == "" && o.GetName() == metav1.NamespaceDefault
}

// checkCertificates evaluates a CertificatePolicy against the Secrets of the
// cluster (the --from objects or a live cluster).
func checkCertificates(p *policyv1.CertificatePolicy, cluster evaluate.Cluster, now time.Time) (CertificateReport, error) {
	namespaces, err := cluster.Namespaces()
	if err != nil {
		return CertificateReport{}, err
	}
	in := certpolicy.Input{Policy: p, Namespaces: namespaces, Now: now}
	m, err := cluster.Mapping(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err != nil {
		return CertificateReport{}, err
	}
	selected, _ := evaluate.SelectNamespaces(p.Spec.NamespaceSelector, namespaces) // an error: Evaluate reports it
	for _, ns := range selected {
		objs, err := cluster.List(m, ns)
		if err != nil {
			return CertificateReport{}, fmt.Errorf("secrets of namespace %s: %w", ns, err)
		}
		for _, o := range objs {
			s := &corev1.Secret{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, s); err != nil {
				return CertificateReport{}, fmt.Errorf("Secret %s/%s: %w", o.GetNamespace(), o.GetName(), err)
			}
			for k, v := range s.StringData { // as the apiserver stores it
				if s.Data == nil {
					s.Data = map[string][]byte{}
				}
				s.Data[k] = []byte(v)
			}
			in.Secrets = append(in.Secrets, s)
		}
	}
	res := certpolicy.Evaluate(in)
	return CertificateReport{Name: p.Name, Namespace: p.Namespace, Status: res.Status, Message: res.Message}, nil
}
