package controlplane

import (
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
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
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
		"--profiling=false",
		"--max-requests-inflight=800",
		"--max-mutating-requests-inflight=400",
	}
}

func (cp *ControlPlane) kcmArgs() []string {
	p := cp.pkiPath
	kubeconfig := filepath.Join(cp.Dir, "kcm", "kubeconfig")
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(cp.Ports.ControllerManager),
		"--cert-dir=" + filepath.Join(cp.Dir, "kcm"),
		"--leader-elect=false",
		"--controllers=" + strings.Join(KCMControllers, ","),
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
