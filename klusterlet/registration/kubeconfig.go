package registration

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"flotilla.dev/flotilla/internal/fileinput"
)

// HubKubeconfig builds the kubeconfig stored in hub-kubeconfig-secret: the hub
// server and CA, and a client certificate read from the files tls.crt and tls.key
// next to the kubeconfig (so rotation only rewrites those files).
func HubKubeconfig(server string, caPEM []byte) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	kc.AuthInfos["agent"] = &clientcmdapi.AuthInfo{ClientCertificate: KeyCert, ClientKey: KeyKey}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "agent"}
	kc.CurrentContext = "hub"
	return clientcmd.Write(*kc)
}

// BootstrapKubeconfig builds a bootstrap kubeconfig: hub server, CA and token.
func BootstrapKubeconfig(server string, caPEM []byte, token string) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	kc.AuthInfos["bootstrap"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "bootstrap"}
	kc.CurrentContext = "hub"
	return clientcmd.Write(*kc)
}

// hubServer returns the server URL and CA of a kubeconfig's current context,
// without reading any file it refers to.
func hubServer(kubeconfig []byte) (string, []byte, error) {
	kc, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return "", nil, err
	}
	name := kc.CurrentContext
	if kctx, ok := kc.Contexts[name]; ok {
		name = kctx.Cluster
	}
	cluster, ok := kc.Clusters[name]
	if !ok {
		if len(kc.Clusters) != 1 {
			return "", nil, fmt.Errorf("kubeconfig has no cluster for context %q", kc.CurrentContext)
		}
		for _, c := range kc.Clusters {
			cluster = c
		}
	}
	ca := cluster.CertificateAuthorityData
	if len(ca) == 0 && cluster.CertificateAuthority != "" {
		if ca, err = fileinput.ReadFile(cluster.CertificateAuthority, fileinput.CredentialLimit, "CA bundles"); err != nil {
			return "", nil, err
		}
	}
	return cluster.Server, ca, nil
}

// writeCredentialFiles writes kubeconfig, tls.crt and tls.key into dir, each
// through a rename so a reader never sees half a file (for whoever reads the
// hub kubeconfig outside the klusterlet: its own clients use the agent's
// transport).
func writeCredentialFiles(dir string, data map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// Key first, then certificate: a reader between the two sees a mismatched
	// pair and keeps the old one rather than a broken one.
	for _, name := range []string{KeyKey, KeyCert, KeyKubeconfig} {
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, data[name], 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}
