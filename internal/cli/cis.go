package cli

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"orch/internal/agent"
	"orch/internal/apiserver"
	"orch/internal/checkconfig"
	"orch/internal/pki"
	"orch/internal/server"
)

// runningOrch is the arguments of the orch process running kind ("server"
// or "agent") on this host, as /proc shows them; nil when none runs.
func runningOrch(kind string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	self := strconv.Itoa(os.Getpid())
	for _, path := range dirs {
		if filepath.Base(filepath.Dir(path)) == self {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		argv := bytes.Split(bytes.TrimRight(data, "\x00"), []byte{0})
		if len(argv) >= 2 && filepath.Base(string(argv[0])) == "orch" && string(argv[1]) == kind {
			args := []string{}
			for _, a := range argv[2:] {
				args = append(args, string(a))
			}
			return args
		}
	}
	return nil
}

// effective parses args as `orch KIND` parses them (cmd is that command),
// its config file included, and gives what config makes of them: the
// configuration that process runs with.
func effective[T any](cmd *cli.Command, args []string, config func(*cli.Context) (T, error)) (cfg T, err error) {
	cmd.Action = func(c *cli.Context) error {
		cfg, err = config(c)
		return err
	}
	runErr := (&cli.App{Commands: []*cli.Command{cmd}, Writer: io.Discard, ErrWriter: io.Discard}).Run(append([]string{"orch", cmd.Name}, args...))
	if err == nil {
		err = runErr
	}
	return cfg, err
}

// cisFacts gathers what `orch check-config --cis` judges on this host.
// notes says where the flags came from.
func cisFacts() (f checkconfig.CISFacts, notes []string, err error) {
	serverArgs, agentArgs := runningOrch("server"), runningOrch("agent")
	var a agent.Config
	dataDir := agent.DefaultDataDir
	switch {
	case serverArgs != nil || agentArgs == nil:
		if serverArgs == nil {
			notes = append(notes, "no orch server or agent runs here: the flags checked are those of "+defaultConfigFile+" for orch server")
		}
		s, err := effective(serverCommand(), serverArgs, serverConfig)
		if err != nil {
			return f, notes, fmt.Errorf("the server's flags: %w", err)
		}
		f.Server, a, dataDir = true, s.Agent, s.DataDir
		if err := serverFacts(&f, s); err != nil {
			return f, notes, err
		}
	default:
		if a, err = effective(agentCommand(), agentArgs, agentConfig); err != nil {
			return f, notes, fmt.Errorf("the agent's flags: %w", err)
		}
		dataDir = a.DataDir
	}
	f.Files = append(f.Files,
		checkconfig.FileFact{Item: "4.1", What: "kubelet kubeconfig", Path: filepath.Join(dataDir, "agent", "kubelet.kubeconfig"), Max: 0o600},
		checkconfig.FileFact{Item: "4.1", What: "node password", Path: filepath.Join(dataDir, "agent", "node-password"), Max: 0o600})
	for i := range f.Files {
		if info, err := os.Stat(f.Files[i].Path); err == nil {
			f.Files[i].Exists, f.Files[i].Mode = true, info.Mode()
		}
	}
	opts := a.TLS
	if opts.MinVersion == 0 {
		opts = pki.DefaultTLSOptions()
	}
	f.TLSMinVersion, f.CipherSuites = opts.MinVersion, opts.CipherSuites
	port := a.KubeletPort
	if port == 0 {
		port = agent.DefaultKubeletPort
	}
	f.AnonymousKubelet = anonymousStatus(fmt.Sprintf("https://127.0.0.1:%d/pods", port))
	f.SeccompDefault, f.ProtectKernelDefaults = a.SeccompDefault, a.ProtectKernelDefaults
	return f, notes, nil
}

func serverFacts(f *checkconfig.CISFacts, s server.Config) error {
	tlsDir := filepath.Join(s.DataDir, "server", "tls")
	f.Files = append(f.Files,
		checkconfig.FileFact{Item: "1.1", What: "admin kubeconfig", Path: s.WriteKubeconfig, Max: 0o600},
		checkconfig.FileFact{Item: "1.1", What: "etcd data directory", Path: filepath.Join(s.DataDir, "server", "db", "etcd"), Max: 0o700},
		checkconfig.FileFact{Item: "1.1", What: "server token", Path: filepath.Join(s.DataDir, "server", "token"), Max: 0o600})
	keys, _ := filepath.Glob(filepath.Join(tlsDir, "*.key"))
	more, _ := filepath.Glob(filepath.Join(tlsDir, "*", "*.key"))
	for _, key := range append(keys, more...) {
		f.Files = append(f.Files, checkconfig.FileFact{Item: "1.1", What: "private key " + filepath.Base(key), Path: key, Max: 0o600})
	}
	plugins, err := apiserver.AdmissionPlugins(s.EnableAdmissionPlugins, s.DisableAdmissionPlugins)
	if err != nil {
		return err
	}
	f.AdmissionPlugins = plugins.Enabled()
	ps, err := apiserver.LoadPodSecurityConfig(s.PodSecurityConfigFile)
	if err != nil {
		return err
	}
	f.PodSecurityDefault = string(ps.Defaults.Enforce)
	managed := filepath.Join(s.DataDir, "server", "cred", "encryption-config.json")
	switch {
	case s.EncryptionProviderConfig != "":
		f.SecretsEncrypted = "as " + s.EncryptionProviderConfig + " says"
	case s.SecretsEncryption:
		f.SecretsEncrypted = "managed by orch (--secrets-encryption)"
	default:
		if _, err := os.Stat(managed); err == nil {
			f.SecretsEncrypted = "managed by orch (the cluster's configuration, " + managed + ")"
		}
	}
	if f.SecretsEncrypted != "" && s.EncryptionProviderConfig == "" {
		f.Files = append(f.Files, checkconfig.FileFact{Item: "1.2", What: "encryption configuration", Path: managed, Max: 0o600})
	}
	if s.Audit.PolicyFile != "" {
		f.AuditLog = s.Audit.Path
	}
	f.RequestTimeout = s.RequestTimeout
	f.AnonymousAPI = anonymousStatus(fmt.Sprintf("https://127.0.0.1:%d/api", s.HTTPSPort))
	return nil
}

// anonymousStatus is the status of a GET without credentials (0 when
// nothing answers).
func anonymousStatus(url string) int {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}} //nolint:gosec // only the status is read
	resp, err := client.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func runCIS(c *cli.Context) error {
	f, notes, err := cisFacts()
	if err != nil {
		return cli.Exit("orch check-config --cis: "+err.Error(), 1)
	}
	for _, n := range notes {
		fmt.Fprintln(c.App.Writer, "note: "+n)
	}
	results := checkconfig.CIS(f)
	if err := checkconfig.WriteCIS(c.App.Writer, results); err != nil {
		return cli.Exit("orch check-config --cis: write the report: "+err.Error(), 1)
	}
	if checkconfig.FailedCIS(results) {
		return cli.Exit("orch check-config --cis: some items FAIL; apply the fix under each", 1)
	}
	return nil
}
