// Command conformance-report turns the JSON reports of ginkgo runs of
// upstream's e2e.test into the results section of docs/conformance.md and
// prints the summary; `make conformance` (scripts/conformance.sh) runs it.
//
//	conformance-report -out docs/conformance.md -commit C -version V REPORT.json...
//
// The section replaced lies between the begin and end markers of the
// file; the rest of it (the known exceptions, written by hand) is kept.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

const (
	beginMarker = "<!-- begin make conformance: generated, do not edit -->"
	endMarker   = "<!-- end make conformance -->"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-report:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("conformance-report", flag.ContinueOnError)
	out := fs.String("out", "", "the markdown file whose generated section is replaced (none: print only)")
	var m meta
	fs.StringVar(&m.Commit, "commit", "", "orch's commit")
	fs.StringVar(&m.Version, "version", "", "the version of e2e.test")
	fs.StringVar(&m.Focus, "focus", "", "the FOCUS of the run")
	fs.StringVar(&m.Labels, "labels", "Conformance", "the label filter of the run")
	fs.IntVar(&m.Minutes, "minutes", 0, "how long the run took")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: conformance-report [-out FILE] [flags] REPORT.json...")
	}
	var specs []spec
	for _, f := range fs.Args() {
		s, err := readReport(f)
		if err != nil {
			return err
		}
		specs = append(specs, s...)
	}
	m.Date = time.Now().UTC().Format("2006-01-02")
	r := summarize(specs)
	fmt.Fprint(stdout, r.text())
	if *out == "" {
		return nil
	}
	doc, err := os.ReadFile(*out)
	if err != nil {
		return err
	}
	doc, err = replaceSection(doc, r.markdown(m))
	if err != nil {
		return fmt.Errorf("%s: %w", *out, err)
	}
	if err := os.WriteFile(*out, doc, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}

// meta says which run a report is of.
type meta struct {
	Date, Commit, Version, Focus, Labels string
	Minutes                              int
}

// spec is the part of a ginkgo SpecReport the report needs.
type spec struct {
	ContainerHierarchyTexts []string
	LeafNodeType            string
	LeafNodeText            string
	LeafNodeLabels          []string
	State                   string
	NumAttempts             int
	Failure                 *struct{ Message string }
}

func readReport(path string) ([]spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var suites []struct{ SpecReports []spec }
	if err := json.Unmarshal(data, &suites); err != nil {
		return nil, fmt.Errorf("%s: not a ginkgo JSON report: %w", path, err)
	}
	var specs []spec
	for _, s := range suites {
		for _, sp := range s.SpecReports {
			// Specs the filters left out are reported skipped, never attempted.
			if sp.LeafNodeType == "It" && sp.NumAttempts > 0 {
				specs = append(specs, sp)
			}
		}
	}
	return specs, nil
}

func (s spec) name() string {
	return strings.Join(append(slices.Clone(s.ContainerHierarchyTexts), s.LeafNodeText), " ")
}

var sigRE = regexp.MustCompile(`^\[(sig-[a-z-]+)\]`)

func (s spec) sig() string {
	if m := sigRE.FindStringSubmatch(s.name()); m != nil {
		return m[1]
	}
	return "other"
}

// outcome is passed, failed or skipped: timeouts, panics and interruptions
// are failures.
func (s spec) outcome() string {
	switch s.State {
	case "passed", "skipped":
		return s.State
	}
	return "failed"
}

// firstLine is the first non-blank line of the failure message.
func (s spec) firstLine() string {
	if s.Failure == nil {
		return s.State
	}
	for _, l := range strings.Split(s.Failure.Message, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return s.State
}

type counts struct{ Passed, Failed, Skipped int }

func (c *counts) add(outcome string) {
	switch outcome {
	case "passed":
		c.Passed++
	case "failed":
		c.Failed++
	default:
		c.Skipped++
	}
}

func (c counts) total() int { return c.Passed + c.Failed + c.Skipped }

type result struct {
	Total    counts
	BySig    map[string]*counts
	Failures []spec // by name
	Skipped  []spec // by name
}

func summarize(specs []spec) result {
	r := result{BySig: map[string]*counts{}}
	for _, s := range specs {
		o := s.outcome()
		r.Total.add(o)
		c := r.BySig[s.sig()]
		if c == nil {
			c = &counts{}
			r.BySig[s.sig()] = c
		}
		c.add(o)
		switch o {
		case "failed":
			r.Failures = append(r.Failures, s)
		case "skipped":
			r.Skipped = append(r.Skipped, s)
		}
	}
	byName := func(a, b spec) int { return strings.Compare(a.name(), b.name()) }
	slices.SortFunc(r.Failures, byName)
	slices.SortFunc(r.Skipped, byName)
	return r
}

func (r result) sigs() []string {
	var sigs []string
	for s := range r.BySig {
		sigs = append(sigs, s)
	}
	slices.Sort(sigs)
	return sigs
}

// text is the summary printed at the end of a run.
func (r result) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d passed, %d failed, %d skipped\n", r.Total.Passed, r.Total.total(), r.Total.Failed, r.Total.Skipped)
	for _, s := range r.sigs() {
		c := r.BySig[s]
		fmt.Fprintf(&b, "  %-22s %3d/%-3d passed, %d failed, %d skipped\n", s, c.Passed, c.total(), c.Failed, c.Skipped)
	}
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "FAIL %s\n     %s\n", f.name(), f.firstLine())
	}
	return b.String()
}

// markdown is the generated section of docs/conformance.md.
func (r result) markdown(m meta) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Last run: %s, orch %s, e2e.test %s\n\n", m.Date, m.Commit, m.Version)
	fmt.Fprintf(&b, "`make conformance`")
	if m.Focus != "" {
		fmt.Fprintf(&b, " with `FOCUS=%s`", m.Focus)
	}
	if m.Labels != "Conformance" {
		fmt.Fprintf(&b, " with `LABELS=%s`", m.Labels)
	}
	fmt.Fprintf(&b, ": %d minutes. **%d of %d passed**, %d failed, %d skipped.\n\n", m.Minutes, r.Total.Passed, r.Total.total(), r.Total.Failed, r.Total.Skipped)
	b.WriteString("| sig | passed | failed | skipped |\n|---|--:|--:|--:|\n")
	for _, s := range r.sigs() {
		c := r.BySig[s]
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", s, c.Passed, c.Failed, c.Skipped)
	}
	section := func(title string, specs []spec) {
		if len(specs) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n### %s\n\n", title)
		for _, s := range specs {
			fmt.Fprintf(&b, "- %s  \n  `%s`\n", mdEscape(s.name()), strings.ReplaceAll(truncate(s.firstLine(), 300), "`", "'"))
		}
	}
	section("Failed, with the first line of the error", r.Failures)
	section("Skipped by the test itself, with its reason", r.Skipped)
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

var mdSpecial = strings.NewReplacer("|", `\|`, "*", `\*`, "_", `\_`, "<", "&lt;")

func mdEscape(s string) string { return mdSpecial.Replace(s) }

// replaceSection puts section between the markers of doc.
func replaceSection(doc []byte, section string) ([]byte, error) {
	begin := bytes.Index(doc, []byte(beginMarker))
	end := bytes.Index(doc, []byte(endMarker))
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("no %q … %q section to replace", beginMarker, endMarker)
	}
	var out bytes.Buffer
	out.Write(doc[:begin+len(beginMarker)])
	out.WriteString("\n")
	out.WriteString(section)
	out.Write(doc[end:])
	return out.Bytes(), nil
}
