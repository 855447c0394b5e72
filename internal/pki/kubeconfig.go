package pki

import (
	"fmt"
	"orch/internal/fsutil"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigName names the cluster, user and context of a written kubeconfig.
const KubeconfigName = "default"

// WriteKubeconfig writes a kubeconfig for serverURL that trusts caPEM and
// authenticates with certPEM/keyPEM, with cluster, user and context all named
// "default". The file is replaced atomically and gets exactly mode (0600 if
// mode is 0); its parent directory is created (0755) if needed.
func WriteKubeconfig(path string, mode os.FileMode, serverURL string, caPEM, certPEM, keyPEM []byte) error {
	if path == "" {
		return fmt.Errorf("no kubeconfig path given: set --write-kubeconfig, e.g. /etc/orch/orch.yaml")
	}
	if serverURL == "" {
		return fmt.Errorf("kubeconfig %q: no server URL given (e.g. https://127.0.0.1:6443)", path)
	}
	if mode == 0 {
		mode = 0o600
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[KubeconfigName] = &clientcmdapi.Cluster{
		Server:                   serverURL,
		CertificateAuthorityData: caPEM,
	}
	cfg.AuthInfos[KubeconfigName] = &clientcmdapi.AuthInfo{
		ClientCertificateData: certPEM,
		ClientKeyData:         keyPEM,
	}
	cfg.Contexts[KubeconfigName] = &clientcmdapi.Context{
		Cluster:  KubeconfigName,
		AuthInfo: KubeconfigName,
	}
	cfg.CurrentContext = KubeconfigName

	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encode kubeconfig %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create directory for kubeconfig %q: %w (choose another --write-kubeconfig or run as root)", path, err)
	}
	if err := fsutil.WriteFileAtomic(path, data, mode); err != nil {
		return fmt.Errorf("write kubeconfig: %w (choose another --write-kubeconfig or run as root)", err)
	}
	return nil
}
