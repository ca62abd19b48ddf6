package framework

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"flotilla.dev/flotilla/internal/ocm"
)

// HubKubeconfigMountPath is where an agent Pod finds its Secret
// <addon>-hub-kubeconfig (kubeconfig, tls.crt, tls.key, cluster-name,
// agent-name), as OCM's agents mount it.
const HubKubeconfigMountPath = "/managed/hub-kubeconfig"

// AgentDeployment describes the Deployment that runs an addon's agent on a
// managed cluster. The shipped addons render theirs with it, and `flotilla
// dev` without nodes runs the same command line as a process (addons.
// HostedAgentArgs reads it back), so both ways run one rendering.
type AgentDeployment struct {
	// Addon names the agent: the Deployment, its ServiceAccount and label app
	// are "<addon>-agent". Required.
	Addon string
	// Namespace is the install namespace. Required.
	Namespace string
	// Image of the agent. Required.
	Image string
	// Args of the container: a flotilla command line without the binary
	// ("addon-agent", "<addon>", flags...).
	Args []string
	// Command of the container: a binary of the image that takes the same
	// Args as flotilla (a slim agent binary). Default: the image's
	// entrypoint, the flotilla binary.
	Command []string
	// Config is the AddOnDeploymentConfig that applies: its registries rewrite
	// Image (OverrideImage), its nodePlacement becomes the Pod's nodeSelector
	// and tolerations, its resourceRequirements the container's resources
	// (ResourcesFor). Default nil: none.
	Config *addonv1alpha1.AddOnDeploymentConfigSpec
}

// Name is the Deployment's and ServiceAccount's name: "<addon>-agent".
func (d AgentDeployment) Name() string { return d.Addon + "-agent" }

// Object renders the Deployment: one replica, the agent's ServiceAccount
// (in-cluster config for the managed cluster), the hub credential Secret
// mounted read-only at HubKubeconfigMountPath (optional: the Pod starts before
// the klusterlet has written it), imagePullPolicy IfNotPresent (an image
// imported into the node is used as it is), non-root, read-only root
// filesystem, no capabilities.
func (d AgentDeployment) Object() *appsv1.Deployment {
	name := d.Name()
	labels := map[string]string{"app": name}
	img := d.Image
	spec := corev1.PodSpec{
		ServiceAccountName: name,
		Containers: []corev1.Container{{
			Name: "agent", Image: img, ImagePullPolicy: corev1.PullIfNotPresent,
			Command:      append([]string(nil), d.Command...),
			Args:         append([]string(nil), d.Args...),
			VolumeMounts: []corev1.VolumeMount{{Name: "hub-kubeconfig", MountPath: HubKubeconfigMountPath, ReadOnly: true}},
			SecurityContext: &corev1.SecurityContext{
				RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}},
		Volumes: []corev1.Volume{{Name: "hub-kubeconfig", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: ocm.AddonHubKubeconfigSecret(d.Addon), Optional: ptr.To(true)}}}},
	}
	if c := d.Config; c != nil {
		spec.Containers[0].Image = OverrideImage(img, c.Registries)
		if p := c.NodePlacement; p != nil {
			spec.NodeSelector = p.NodeSelector
			spec.Tolerations = p.Tolerations
		}
		if r, ok := ResourcesFor("Deployment", name, spec.Containers[0].Name, c.ResourceRequirements); ok {
			spec.Containers[0].Resources = r
		}
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.Namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}
