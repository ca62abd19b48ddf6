package registration

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"

	"flotilla.dev/flotilla/internal/ocm"
)

// Addon registration and health, on the managed cluster's side. For every
// ManagedClusterAddOn in the cluster's namespace on the hub, the registration
// agent
//   - files a CSR for the registration the hub published (signer
//     kube-apiserver-client and OCM's addon subject, or a CustomSigner's signer
//     and subject) with its own hub credential,
//     and writes the issued certificate to Secret <addon>-hub-kubeconfig in the
//     addon's install namespace (keys kubeconfig, tls.crt, tls.key,
//     cluster-name, agent-name), renewing it like its own certificate;
//   - under Lease health, reads the Lease named after the addon in that
//     namespace and reports Available True while it is renewed, Unknown once it
//     is stale (5 x its duration) or missing;
//   - removes the credential Secrets of addons no longer enabled.

// AddonLeaseStaleFactor: an addon lease older than this many durations is stale.
const AddonLeaseStaleFactor = 5

// addonState is what the agent remembers about one addon between rounds.
type addonState struct {
	csr string // pending CSR name
	key []byte // its private key
}

// addonSyncer keeps addon credentials and health.
type addonSyncer struct {
	a      *Agent
	hub    kubernetes.Interface
	addons addonclient.Interface
	state  map[string]*addonState
}

// runAddons runs the addon rounds once the agent has joined, until ctx ends.
func (a *Agent) runAddons(ctx context.Context) {
	cfg, _, err := a.WaitJoined(ctx)
	if err != nil {
		return
	}
	cfg = withTimeout(cfg)
	hub, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		a.log.Error(err, "addon registration")
		return
	}
	ac, err := addonclient.NewForConfig(cfg)
	if err != nil {
		a.log.Error(err, "addon registration")
		return
	}
	s := &addonSyncer{a: a, hub: hub, addons: ac, state: map[string]*addonState{}}
	// Rounds run every AddonSyncInterval (addon leases on the managed
	// cluster age with time) and at once when an addon changes on the hub.
	tick := time.NewTicker(a.opts.AddonSyncInterval)
	defer tick.Stop()
	for {
		if err := s.round(ctx); err != nil && ctx.Err() == nil {
			a.log.V(1).Info("addon round", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-a.addonKick:
		}
	}
}

// addonList is the cluster's ManagedClusterAddOns: from the hub view's
// watch, or, before it has listed, one list from the hub apiserver's watch
// cache (resourceVersion "0").
func (s *addonSyncer) addonList(ctx context.Context) ([]*addonv1alpha1.ManagedClusterAddOn, error) {
	if list, known := s.a.view.addonList(); known {
		return list, nil
	}
	list, err := s.addons.AddonV1alpha1().ManagedClusterAddOns(s.a.opts.ClusterName).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("list ManagedClusterAddOns: %w", err)
	}
	out := make([]*addonv1alpha1.ManagedClusterAddOn, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (s *addonSyncer) round(ctx context.Context) error {
	list, err := s.addonList(ctx)
	if err != nil {
		return err
	}
	enabled := map[string]string{} // addon -> install namespace
	for _, mca := range list {
		if mca.DeletionTimestamp != nil {
			continue
		}
		ns := mca.Status.Namespace
		if ns == "" {
			ns = ocm.DefaultAddonInstallNamespace
		}
		if len(mca.Status.Registrations) > 0 {
			enabled[mca.Name] = ns
			if err := s.credential(ctx, mca, ns); err != nil {
				s.a.log.Error(err, "addon credential", "addon", mca.Name)
			}
		}
		if mca.Status.HealthCheck.Mode == addonv1alpha1.HealthCheckModeLease {
			if err := s.health(ctx, mca, ns); err != nil {
				s.a.log.Error(err, "addon health", "addon", mca.Name)
			}
		}
	}
	return s.removeStale(ctx, enabled)
}

// credential makes sure the addon's Secret holds a valid, not yet due
// certificate for its published subject, filing or following a CSR otherwise.
func (s *addonSyncer) credential(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, ns string) error {
	reg := mca.Status.Registrations[0]
	signer := reg.SignerName
	if signer == "" {
		signer = certificatesv1.KubeAPIServerClientSignerName
	}
	kubeClient := signer == certificatesv1.KubeAPIServerClientSignerName
	subject := pkix.Name{CommonName: reg.Subject.User, Organization: reg.Subject.Groups, OrganizationalUnit: reg.Subject.OrganizationUnits}
	name := ocm.AddonHubKubeconfigSecret(mca.Name)
	secrets := s.a.spoke.CoreV1().Secrets(ns)
	sec, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err == nil {
		if cert, perr := parseCert(sec.Data[KeyCert]); perr == nil && validFor(sec.Data[KeyCert], subject, time.Now()) &&
			time.Now().Before(RotationDue(cert, s.a.opts.RotationFraction)) {
			delete(s.state, mca.Name)
			return nil
		}
	}
	st := s.state[mca.Name]
	if st == nil {
		key, err := newKey()
		if err != nil {
			return err
		}
		st = &addonState{key: key}
		s.state[mca.Name] = st
	}
	csrs := s.hub.CertificatesV1().CertificateSigningRequests()
	if st.csr == "" {
		csr, err := buildAddonCSR(s.a.opts.ClusterName, mca.Name, signer, subject, st.key, s.a.opts.AddonCertExpirationSeconds)
		if err != nil {
			return err
		}
		created, err := csrs.Create(ctx, csr, metav1.CreateOptions{})
		if err != nil {
			return describeHubError("create addon CSR", err)
		}
		st.csr = created.Name
		s.a.log.Info("created addon CSR", "addon", mca.Name, "csr", created.Name)
	}
	csr, err := csrs.Get(ctx, st.csr, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		st.csr = ""
		return nil
	}
	if err != nil {
		return err
	}
	certPEM, err := csrResult(csr)
	if err != nil {
		delete(s.state, mca.Name) // denied or failed: a new key and CSR next round
		return err
	}
	if certPEM == nil {
		return nil // not signed yet
	}
	if _, err := checkIssued(certPEM, st.key, subject); err != nil {
		delete(s.state, mca.Name)
		return err
	}
	if err := s.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	agent, _ := strings.CutPrefix(reg.Subject.User, ocm.AddonAgentUser(s.a.opts.ClusterName, mca.Name, ""))
	data := map[string][]byte{KeyCert: certPEM, KeyKey: st.key,
		KeyClusterName: []byte(s.a.opts.ClusterName), KeyAgentName: []byte(agent)}
	if kubeClient {
		// A custom signer's certificate is no hub identity: no kubeconfig.
		server, ca := s.a.hubServerCA()
		kubeconfig, err := HubKubeconfig(server, ca)
		if err != nil {
			return err
		}
		data[KeyKubeconfig] = kubeconfig
	}
	want := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{ocm.AddonNameLabel: mca.Name}}, Data: data}
	if sec == nil || sec.ResourceVersion == "" {
		_, err = secrets.Create(ctx, want, metav1.CreateOptions{})
	} else {
		sec.Data, sec.Labels = data, want.Labels
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write Secret %s/%s: %w", ns, name, err)
	}
	delete(s.state, mca.Name)
	s.a.log.Info("addon hub credential written", "addon", mca.Name, "secret", ns+"/"+name)
	return nil
}

func (s *addonSyncer) ensureNamespace(ctx context.Context, ns string) error {
	_, err := s.a.spoke.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return nil
}

// AddonLeaseCondition is the Available condition a Lease says at now (nil lease: not found).
func AddonLeaseCondition(lease *metav1.MicroTime, durationSeconds int32, now time.Time, found bool) metav1.Condition {
	c := metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable}
	if durationSeconds <= 0 {
		durationSeconds = 60
	}
	switch {
	case !found:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, addonv1alpha1.AddonAvailableReasonLeaseLeaseNotFound, "The addon agent has not created its Lease on the managed cluster"
	case lease == nil || now.Sub(lease.Time) > time.Duration(AddonLeaseStaleFactor*durationSeconds)*time.Second:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, addonv1alpha1.AddonAvailableReasonLeaseUpdateStopped, "The addon agent stopped renewing its Lease"
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, addonv1alpha1.AddonAvailableReasonLeaseLeaseUpdated, "The addon agent renews its Lease"
	}
	return c
}

func (s *addonSyncer) health(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, ns string) error {
	l, err := s.a.spoke.CoordinationV1().Leases(ns).Get(ctx, mca.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	var cond metav1.Condition
	if err != nil {
		cond = AddonLeaseCondition(nil, 0, time.Now(), false)
	} else {
		var d int32
		if l.Spec.LeaseDurationSeconds != nil {
			d = *l.Spec.LeaseDurationSeconds
		}
		cond = AddonLeaseCondition(l.Spec.RenewTime, d, time.Now(), true)
	}
	cond.ObservedGeneration = mca.Generation
	if c := meta.FindStatusCondition(mca.Status.Conditions, cond.Type); c != nil && c.Status == cond.Status && c.Reason == cond.Reason {
		return nil
	}
	api := s.addons.AddonV1alpha1().ManagedClusterAddOns(mca.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := api.Get(ctx, mca.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		meta.SetStatusCondition(&cur.Status.Conditions, cond)
		_, err = api.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// removeStale deletes credential Secrets of addons no longer enabled.
func (s *addonSyncer) removeStale(ctx context.Context, enabled map[string]string) error {
	list, err := s.a.spoke.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: ocm.AddonNameLabel})
	if err != nil {
		return err
	}
	for _, sec := range list.Items {
		addon := sec.Labels[ocm.AddonNameLabel]
		if sec.Name != ocm.AddonHubKubeconfigSecret(addon) || enabled[addon] == sec.Namespace {
			continue
		}
		if err := s.a.spoke.CoreV1().Secrets(sec.Namespace).Delete(ctx, sec.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		s.a.log.Info("addon disabled: hub credential removed", "addon", addon, "secret", sec.Namespace+"/"+sec.Name)
	}
	return nil
}

// buildAddonCSR is the CSR of an addon agent: labels cluster-name and
// addon-name, generateName addon-<cluster>-<addon>-, the published subject.
func buildAddonCSR(cluster, addon, signer string, subject pkix.Name, keyPEM []byte, expirationSeconds int32) (*certificatesv1.CertificateSigningRequest, error) {
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		return nil, err
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "addon-" + cluster + "-" + addon + "-",
			Labels: map[string]string{ocm.ClusterNameLabel: cluster, ocm.AddonNameLabel: addon}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth},
		},
	}
	if expirationSeconds > 0 {
		csr.Spec.ExpirationSeconds = &expirationSeconds
	}
	return csr, nil
}

// hubServerCA is the hub address and CA of the agent's current credential.
func (a *Agent) hubServerCA() (string, []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hub == nil {
		return "", nil
	}
	return a.hub.server, a.hub.ca
}
