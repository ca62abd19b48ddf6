package controlplane

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func (cp *ControlPlane) etcdArgs(fast bool) []string {
	client := "http://127.0.0.1:" + strconv.Itoa(cp.Ports.EtcdClient)
	peer := "http://127.0.0.1:" + strconv.Itoa(cp.Ports.EtcdPeer)
	args := []string{
		"--name=" + cp.Name,
		"--data-dir=" + filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=" + cp.Name + "=" + peer,
		"--log-level=warn",
	}
	if fast {
		args = append(args, "--unsafe-no-fsync=true")
	}
	return args
}

func (cp *ControlPlane) apiServerArgs() []string {
	p := cp.pkiPath
	return []string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(cp.Ports.EtcdClient),
		"--bind-address=" + cp.address,
		"--advertise-address=" + cp.address,
		"--secure-port=" + strconv.Itoa(cp.Ports.APIServer),
		"--cert-dir=" + filepath.Join(cp.Dir, "pki"),
		"--tls-cert-file=" + p("apiserver.crt"),
		"--tls-private-key-file=" + p("apiserver.key"),
		"--client-ca-file=" + p("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p("sa.pub"),
		"--service-account-signing-key-file=" + p("sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
		// No kubelets and no Service routing on a local control plane.
		"--endpoint-reconciler-type=none",
		"--profiling=" + strconv.FormatBool(os.Getenv(EnvAPIServerProfiling) == "true"),
		"--max-requests-inflight=800",
		"--max-mutating-requests-inflight=400",
		// The aggregation layer (APIServices such as the hub's
		// compliance.flotilla.dev): the apiserver authenticates the user and
		// forwards the identity in X-Remote-* headers over the front-proxy
		// client certificate; it dials the APIService's endpoint directly
		// (there is no kube-proxy for Service IPs on this machine).
		"--requestheader-client-ca-file=" + p("front-proxy-ca.crt"),
		"--requestheader-allowed-names=" + FrontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p("front-proxy-client.crt"),
		"--proxy-client-key-file=" + p("front-proxy-client.key"),
		"--enable-aggregator-routing=true",
	}
}

// apiServerNodeArgs let kubelets join (bootstrap tokens) and let the apiserver
// reach them for logs and exec, by the InternalIP they report.
func (cp *ControlPlane) apiServerNodeArgs() []string {
	p := cp.pkiPath
	return []string{
		"--enable-bootstrap-token-auth=true",
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--kubelet-client-certificate=" + p("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + p("apiserver-kubelet-client.key"),
	}
}

func (cp *ControlPlane) schedulerArgs() []string {
	kubeconfig := filepath.Join(cp.Dir, "scheduler", "kubeconfig")
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(cp.Ports.Scheduler),
		"--cert-dir=" + filepath.Join(cp.Dir, "scheduler"),
		"--leader-elect=false",
		"--profiling=false",
	}
}

func (cp *ControlPlane) kcmArgs(nodes bool) []string {
	p := cp.pkiPath
	kubeconfig := filepath.Join(cp.Dir, "kcm", "kubeconfig")
	controllers := KCMControllers
	if nodes {
		controllers = append(append([]string{}, KCMControllers...), NodeKCMControllers...)
	}
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(cp.Ports.ControllerManager),
		"--cert-dir=" + filepath.Join(cp.Dir, "kcm"),
		"--leader-elect=false",
		"--controllers=" + strings.Join(controllers, ","),
		"--cluster-signing-cert-file=" + p("ca.crt"),
		"--cluster-signing-key-file=" + p("ca.key"),
		"--root-ca-file=" + p("ca.crt"),
		"--service-account-private-key-file=" + p("sa.key"),
		"--use-service-account-credentials=false",
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--concurrent-gc-syncs=10",
		"--concurrent-namespace-syncs=10",
		"--profiling=false",
	}
}
