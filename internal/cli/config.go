package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	"sigs.k8s.io/yaml"
)

const defaultConfigFile = "/etc/orch/config.yaml"

func configFlag() cli.Flag {
	return &cli.StringFlag{Name: "config", Aliases: []string{"c"}, Value: defaultConfigFile,
		Usage: "YAML file whose keys are flag names (plus every *.yaml in <file>.d/); flags on the command line win"}
}

// loadConfigFile sets every flag not given on the command line from the
// config file and its drop-in directory. Unknown keys are an error.
func loadConfigFile(c *cli.Context) error {
	path := c.String("config")
	files := []string{}
	if _, err := os.Stat(path); err == nil {
		files = append(files, path)
	} else if c.IsSet("config") {
		return fmt.Errorf("config file %q: %w", path, err)
	}
	dropIns, _ := filepath.Glob(path + ".d/*.yaml")
	sort.Strings(dropIns)
	files = append(files, dropIns...)
	known := map[string]bool{}
	for _, f := range c.Command.Flags {
		for _, name := range f.Names() {
			known[name] = true
		}
	}
	fromConfig := map[string]bool{}
	for _, file := range files {
		if err := applyConfigFile(c, file, known, fromConfig); err != nil {
			return err
		}
	}
	return nil
}

// applyConfigFile sets flags from one file. fromConfig remembers keys set from
// an earlier file, so a later drop-in overrides it but never the command line.
func applyConfigFile(c *cli.Context, file string, known, fromConfig map[string]bool) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read config file %q: %w", file, err)
	}
	var values map[string]interface{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		return fmt.Errorf("config file %q is not valid YAML: %w", file, err)
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if !known[key] || key == "config" {
			return fmt.Errorf("config file %q: unknown key %q (keys are the flag names of `orch %s`, e.g. data-dir)", file, key, c.Command.Name)
		}
		if c.IsSet(key) && !fromConfig[key] {
			continue // the command line wins
		}
		for _, v := range configValues(values[key]) {
			if err := c.Set(key, v); err != nil {
				return fmt.Errorf("config file %q: key %q: %w", file, key, err)
			}
		}
		fromConfig[key] = true
	}
	return nil
}

func configValues(v interface{}) []string {
	switch v := v.(type) {
	case []interface{}:
		out := make([]string, 0, len(v))
		for _, item := range v {
			out = append(out, fmt.Sprint(item))
		}
		return out
	case bool:
		return []string{strconv.FormatBool(v)}
	case float64:
		return []string{strconv.FormatFloat(v, 'f', -1, 64)}
	}
	return []string{fmt.Sprint(v)}
}

// splitList accepts repeated flags and comma-separated values alike.
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

func parseMode(s string) (os.FileMode, error) {
	mode, err := strconv.ParseUint(s, 8, 32)
	if err != nil || mode > 0o777 {
		return 0, errors.New("--write-kubeconfig-mode " + strconv.Quote(s) + " is not an octal file mode such as 0600")
	}
	return os.FileMode(mode), nil
}
