package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"sigs.k8s.io/yaml"

	"orch/internal/etcdsnapshot"
)

const defaultEtcdEndpoint = "http://127.0.0.1:2379"

func etcdSnapshotCommand() *cli.Command {
	return &cli.Command{
		Name:  "etcd-snapshot",
		Usage: "save, list, delete and prune snapshots of the embedded etcd (restore with `orch server --cluster-reset --cluster-reset-restore-path=FILE`)",
		Subcommands: []*cli.Command{
			{
				Name:      "save",
				Usage:     "take a snapshot now from the orch server running on this host",
				ArgsUsage: " ",
				Flags: append(snapshotFlags(),
					&cli.StringFlag{Name: "name", Value: etcdsnapshot.DefaultName, Usage: "name of the snapshot; the file is NAME-NODE-UNIXSECONDS.db"},
					&cli.StringFlag{Name: "etcd-endpoint", Value: defaultEtcdEndpoint, Usage: "client URL of this host's etcd; with the etcd client certificate in DATA-DIR/server/tls/etcd " +
						"(every server's etcd wants it), an http:// URL is tried as https:// first"},
					&cli.DurationFlag{Name: "timeout", Value: 10 * time.Minute, Usage: "give up after this long"},
				),
				Before: loadSnapshotConfig,
				Action: runSnapshotSave,
			},
			{
				Name:      "ls",
				Aliases:   []string{"list"},
				Usage:     "list the snapshots in the snapshot directory, oldest first",
				ArgsUsage: " ",
				Flags:     snapshotFlags(),
				Before:    loadSnapshotConfig,
				Action:    runSnapshotList,
			},
			{
				Name:      "delete",
				Usage:     "delete snapshots by name (as ls shows them) and their .sha256 files",
				ArgsUsage: "NAME...",
				Flags:     snapshotFlags(),
				Before:    loadSnapshotConfig,
				Action:    runSnapshotDelete,
			},
			{
				Name:      "prune",
				Usage:     "delete this node's oldest snapshots of a name, keeping the newest --snapshot-retention",
				ArgsUsage: " ",
				Flags: append(snapshotFlags(),
					&cli.StringFlag{Name: "name", Value: etcdsnapshot.DefaultName, Usage: "prune the snapshots NAME-NODE-*.db"},
					&cli.IntFlag{Name: "snapshot-retention", Value: etcdsnapshot.DefaultRetention, Usage: "how many snapshots to keep"},
				),
				Before: loadSnapshotConfig,
				Action: runSnapshotPrune,
			},
		},
	}
}

// snapshotFlags are the flags every etcd-snapshot subcommand has; a fresh
// set each time, as urfave/cli flags hold their values.
func snapshotFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Value: defaultConfigFile,
			Usage: "the server's config file (plus every *.yaml in <file>.d/): its data-dir, node-name, etcd-snapshot-dir and etcd-snapshot-retention apply unless given here; other keys are ignored"},
		&cli.StringFlag{Name: "data-dir", Value: "/var/lib/orch", Usage: "the orch server's data directory"},
		&cli.StringFlag{Name: "etcd-snapshot-dir", Usage: "directory of the snapshots (default: DATA-DIR/server/db/snapshots)"},
		&cli.StringFlag{Name: "node-name", Usage: "node name in snapshot file names (default: the hostname, lowercased)"},
	}
}

// snapshotConfigKeys are the keys of the server's config file that the
// etcd-snapshot subcommands read, and the flag each sets. The file is the
// server's, so every other key is ignored rather than refused.
var snapshotConfigKeys = map[string]string{
	"data-dir":                "data-dir",
	"etcd-snapshot-dir":       "etcd-snapshot-dir",
	"node-name":               "node-name",
	"etcd-snapshot-retention": "snapshot-retention",
}

// loadSnapshotConfig reads data-dir, node-name and the snapshot settings
// from the server's config file (and its drop-ins) for every flag not
// given on the command line.
func loadSnapshotConfig(c *cli.Context) error {
	return loadServerConfig(c, "orch etcd-snapshot", snapshotConfigKeys)
}

// loadServerConfig sets the flags of keys (config file key → flag) from
// the server's config file --config and its drop-ins, for every flag of
// the command not given on the command line; command names it in errors.
func loadServerConfig(c *cli.Context, command string, keys map[string]string) error {
	path := c.String("config")
	var files []string
	if _, err := os.Stat(path); err == nil {
		files = append(files, path)
	} else if c.IsSet("config") {
		return cli.Exit(fmt.Sprintf("%s: config file %q: %v", command, path, err), 1)
	}
	dropIns, _ := filepath.Glob(path + ".d/*.yaml")
	sort.Strings(dropIns)
	files = append(files, dropIns...)
	has := map[string]bool{}
	for _, f := range c.Command.Flags {
		for _, name := range f.Names() {
			has[name] = true
		}
	}
	fromConfig := map[string]bool{} // a later drop-in overrides an earlier file, never the command line
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return cli.Exit(fmt.Sprintf("%s: read config file %q: %v", command, file, err), 1)
		}
		var values map[string]interface{}
		if err := yaml.Unmarshal(data, &values); err != nil {
			return cli.Exit(fmt.Sprintf("%s: config file %q is not valid YAML: %v", command, file, err), 1)
		}
		for key, flag := range keys {
			v, ok := values[key]
			if !ok || !has[flag] || c.IsSet(flag) && !fromConfig[flag] {
				continue // absent, not this subcommand's, or given on the command line
			}
			for _, s := range configValues(v) {
				if err := c.Set(flag, s); err != nil {
					return cli.Exit(fmt.Sprintf("%s: config file %q: key %q: %v", command, file, key, err), 1)
				}
			}
			fromConfig[flag] = true
		}
	}
	return nil
}

// snapshotDir is --etcd-snapshot-dir or its default under --data-dir.
func snapshotDir(c *cli.Context) string {
	if dir := c.String("etcd-snapshot-dir"); dir != "" {
		return dir
	}
	return etcdsnapshot.DefaultDir(c.String("data-dir"))
}

// snapshotNodeName is --node-name or the hostname, lowercased as the
// server names its node.
func snapshotNodeName(c *cli.Context) (string, error) {
	name := c.String("node-name")
	if name == "" {
		host, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("no --node-name given and the hostname is unknown: %w", err)
		}
		name = host
	}
	return strings.ToLower(name), nil
}

func runSnapshotSave(c *cli.Context) error {
	fail := func(err error) error { return cli.Exit("orch etcd-snapshot save: "+err.Error(), 1) }
	if c.NArg() > 0 {
		return fail(fmt.Errorf("unexpected arguments %q (name the snapshot with --name)", c.Args().Slice()))
	}
	node, err := snapshotNodeName(c)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	client, err := connectEtcd(ctx, c.String("data-dir"), c.String("etcd-endpoint"))
	if err != nil {
		return fail(err)
	}
	defer client.Close()
	snap, err := etcdsnapshot.Save(ctx, client, snapshotDir(c), c.String("name"), node, time.Now())
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(c.App.Writer, "saved %s (%d bytes, sha256 %s)\n", snap.Path, snap.Size, snap.SHA256)
	return nil
}

func runSnapshotList(c *cli.Context) error {
	list, err := etcdsnapshot.List(snapshotDir(c))
	if err != nil {
		return cli.Exit("orch etcd-snapshot ls: "+err.Error(), 1)
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "NAME\tSIZE\tCREATED")
	for _, s := range list {
		fmt.Fprintf(w, "%s\t%d\t%s\n", s.Name, s.Size, s.CreatedAt.Local().Format(time.RFC3339))
	}
	return w.Flush()
}

func runSnapshotDelete(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.Exit("orch etcd-snapshot delete: name the snapshots to delete (see orch etcd-snapshot ls)", 1)
	}
	if err := etcdsnapshot.Delete(snapshotDir(c), c.Args().Slice()...); err != nil {
		return cli.Exit("orch etcd-snapshot delete: "+err.Error(), 1)
	}
	for _, name := range c.Args().Slice() {
		fmt.Fprintf(c.App.Writer, "deleted %s\n", name)
	}
	return nil
}

func runSnapshotPrune(c *cli.Context) error {
	fail := func(err error) error { return cli.Exit("orch etcd-snapshot prune: "+err.Error(), 1) }
	retain := c.Int("snapshot-retention")
	if retain < 1 {
		return fail(fmt.Errorf("--snapshot-retention %d: keep at least 1 snapshot (delete the rest with orch etcd-snapshot delete)", retain))
	}
	node, err := snapshotNodeName(c)
	if err != nil {
		return fail(err)
	}
	pruned, err := etcdsnapshot.Prune(snapshotDir(c), c.String("name")+"-"+node, retain)
	for _, s := range pruned {
		fmt.Fprintf(c.App.Writer, "deleted %s\n", s.Name)
	}
	if err != nil {
		return fail(err)
	}
	return nil
}

// connectEtcd returns a client of the local etcd at endpoint. With the
// etcd client certificate in data-dir/server/tls/etcd (which every server
// has: its etcd wants it) it speaks TLS with it, and tries an http://
// endpoint as https:// first (an older server's etcd spoke plain HTTP).
func connectEtcd(ctx context.Context, dataDir, endpoint string) (*clientv3.Client, error) {
	tlsDir := filepath.Join(dataDir, "server", "tls", "etcd")
	tlsInfo := transport.TLSInfo{
		TrustedCAFile: filepath.Join(tlsDir, "ca.crt"),
		CertFile:      filepath.Join(tlsDir, "client.crt"),
		KeyFile:       filepath.Join(tlsDir, "client.key"),
	}
	var tlsConfig *tls.Config
	if exists(tlsInfo.TrustedCAFile) && exists(tlsInfo.CertFile) && exists(tlsInfo.KeyFile) {
		cfg, err := tlsInfo.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd client certificate in %s: %w", tlsDir, err)
		}
		tlsConfig = cfg
	}
	endpoints := []string{endpoint}
	if tlsConfig != nil && strings.HasPrefix(endpoint, "http://") {
		endpoints = []string{"https://" + strings.TrimPrefix(endpoint, "http://"), endpoint}
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("--etcd-endpoint %q is not a URL such as %s", endpoint, defaultEtcdEndpoint)
	}
	// A quick dial first: no listener means no server, said plainly.
	conn, err := net.DialTimeout("tcp", u.Host, 3*time.Second)
	if err != nil {
		return nil, fmt.Errorf("cannot reach etcd at %s: is orch server running on this host? (start it, or point --etcd-endpoint and --data-dir at the server's): %w", u.Host, err)
	}
	conn.Close()
	var errs []error
	for _, ep := range endpoints {
		client, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, TLS: tlsConfig, DialTimeout: 5 * time.Second, Logger: zap.NewNop(), Context: ctx})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ep, err))
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = client.Status(sctx, ep)
		cancel()
		if err == nil {
			return client, nil
		}
		client.Close()
		errs = append(errs, fmt.Errorf("%s: %w", ep, err))
	}
	return nil, fmt.Errorf("etcd does not answer: is orch server running on this host, with this --data-dir? (%w)", errors.Join(errs...))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
