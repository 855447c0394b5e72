// Command svcload drives kube-proxy-peer.sh: it loads an apiserver with the
// Services and EndpointSlices of internal/proxy's syntheticInput and reads
// kube-proxy's sync metrics, so that upstream kube-proxy can be measured on the
// same input as orch's proxy benchmarks.
//
//	svcload create -kubeconfig K -n N -node NAME -node-ip IP
//	svcload wait-full -metrics URL
//	svcload change -kubeconfig K -n N -metrics URL
//
// create makes namespace "bench", a Node NAME with InternalIP IP, and N
// ClusterIP Services svc-00000... with one TCP port 80 and no selector, each
// with one EndpointSlice (label kubernetes.io/service-name) of 2 ready
// endpoints on port 8080, the first on NAME and the second on "node-b".
//
// wait-full waits for kube-proxy's first full sync (IPv4) and prints its
// duration from kubeproxy_sync_full_proxy_rules_duration_seconds.
//
// change waits until kube-proxy's last sync is older than its minimum sync
// period (-quiet), then moves the first endpoint of Service N/2 to another
// address (stamping endpoints.kubernetes.io/last-change-trigger-time), polls
// the metrics until the next IPv4 sync completes and prints: the time from
// just before the update request to the end of that sync (kube-proxy's
// kubeproxy_sync_proxy_rules_last_timestamp_seconds, so it does not depend on
// the polling interval), that sync's own duration, whether it was full or
// partial, and kube-proxy's network programming latency for it.
//
// Every scrape makes kube-proxy read netfilter counters, so the metrics are
// polled only every -poll (50 ms) to disturb the syncs being measured little.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

const namespace = "bench"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: svcload create|wait-full|change [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "admin kubeconfig of the apiserver")
	n := fs.Int("n", 1000, "number of Services")
	node := fs.String("node", "kp-node", "node kube-proxy runs as (first endpoint of each slice)")
	nodeIP := fs.String("node-ip", "10.199.0.2", "InternalIP of that node")
	workers := fs.Int("workers", 16, "concurrent creates")
	metricsURL := fs.String("metrics", "http://127.0.0.1:10249/metrics", "kube-proxy's metrics")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after")
	quiet := fs.Duration("quiet", 1500*time.Millisecond, "change: time since kube-proxy's last sync before the change (above --iptables-min-sync-period)")
	pollEvery := fs.Duration("poll", 50*time.Millisecond, "metrics polling interval")
	_ = fs.Parse(os.Args[2:])
	pollInterval = *pollEvery

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var err error
	switch os.Args[1] {
	case "create":
		err = create(ctx, mustClient(*kubeconfig), *n, *node, *nodeIP, *workers)
	case "wait-full":
		err = waitFull(ctx, *metricsURL)
	case "change":
		err = change(ctx, mustClient(*kubeconfig), *n, *metricsURL, *quiet)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "svcload:", err)
		os.Exit(1)
	}
}

func mustClient(kubeconfig string) kubernetes.Interface {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "svcload:", err)
		os.Exit(1)
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit
	return kubernetes.NewForConfigOrDie(cfg)
}

// synthetic is internal/proxy's syntheticService(i, 2), except that the
// ClusterIPs start at 10.43.1.1 so they miss the apiserver's own 10.43.0.x
// (kubernetes and DNS Services).
func synthetic(i int, node string) (*v1.Service, *discovery.EndpointSlice) {
	name := fmt.Sprintf("svc-%05d", i)
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1.ServiceSpec{
			Type:      v1.ServiceTypeClusterIP,
			ClusterIP: fmt.Sprintf("10.43.%d.%d", i/250+1, i%250+1),
			Ports:     []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP}},
		},
	}
	sl := &discovery.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name + "-1", Labels: map[string]string{discovery.LabelServiceName: name}},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(v1.ProtocolTCP)}},
	}
	for j := range 2 {
		nn := node
		if j%2 == 1 {
			nn = "node-b"
		}
		k := i*2 + j
		sl.Endpoints = append(sl.Endpoints, discovery.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", 100+k/62500, k/250%250, k%250+1)},
			Conditions: discovery.EndpointConditions{Ready: ptr.To(true)},
			NodeName:   ptr.To(nn),
		})
	}
	return svc, sl
}

func create(ctx context.Context, c kubernetes.Interface, n int, node, nodeIP string, workers int) error {
	start := time.Now()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	nodeObj := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Status:     v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: nodeIP}}},
	}
	got, err := c.CoreV1().Nodes().Create(ctx, nodeObj, metav1.CreateOptions{})
	if err == nil {
		got.Status = nodeObj.Status
		_, err = c.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{})
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("node: %w", err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				svc, sl := synthetic(i, node)
				if _, err := c.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- fmt.Errorf("service %s: %w", svc.Name, err)
					return
				}
				if _, err := c.DiscoveryV1().EndpointSlices(namespace).Create(ctx, sl, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- fmt.Errorf("endpointslice %s: %w", sl.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Printf("created %d services and endpointslices in %.1f s\n", n, time.Since(start).Seconds())
	return nil
}

// metrics is one scrape: sample name with labels → value.
type metrics map[string]float64

func scrape(ctx context.Context, url string) (metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	m := metrics{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "kubeproxy_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

const v4 = `{ip_family="IPv4"}`

func (m metrics) get(name string) float64 { return m[name+v4] }

var pollInterval = 50 * time.Millisecond

// poll scrapes every pollInterval until done says so.
func poll(ctx context.Context, url string, done func(metrics) bool) (metrics, error) {
	for {
		m, err := scrape(ctx, url)
		if err == nil && done(m) {
			return m, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return nil, fmt.Errorf("waiting for kube-proxy's metrics: %w", err)
		case <-time.After(pollInterval):
		}
	}
}

func waitFull(ctx context.Context, url string) error {
	m, err := poll(ctx, url, func(m metrics) bool {
		return m.get("kubeproxy_sync_full_proxy_rules_duration_seconds_count") >= 1
	})
	if err != nil {
		return err
	}
	c := m.get("kubeproxy_sync_full_proxy_rules_duration_seconds_count")
	fmt.Printf("full_syncs=%g full_sync_ms=%.0f iptables_nat_rules=%g iptables_filter_rules=%g\n",
		c, 1000*m.get("kubeproxy_sync_full_proxy_rules_duration_seconds_sum")/c,
		m[`kubeproxy_sync_proxy_rules_iptables_total{ip_family="IPv4",table="nat"}`],
		m[`kubeproxy_sync_proxy_rules_iptables_total{ip_family="IPv4",table="filter"}`])
	return nil
}

func change(ctx context.Context, c kubernetes.Interface, n int, url string, quiet time.Duration) error {
	name := fmt.Sprintf("svc-%05d-1", n/2)
	sl, err := c.DiscoveryV1().EndpointSlices(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	// Let kube-proxy's minimum sync period pass since its last sync, so that
	// the change is synced at once rather than held back.
	before, err := poll(ctx, url, func(m metrics) bool {
		last := m.get("kubeproxy_sync_proxy_rules_last_timestamp_seconds")
		return last > 0 && time.Since(time.Unix(0, int64(last*1e9))) > quiet
	})
	if err != nil {
		return err
	}
	old := sl.Endpoints[0].Addresses[0]
	addr := "10.250.0.1"
	if old == addr {
		_, orig := synthetic(n/2, "")
		addr = orig.Endpoints[0].Addresses[0]
	}
	sl.Endpoints[0].Addresses = []string{addr}
	start := time.Now()
	if sl.Annotations == nil {
		sl.Annotations = map[string]string{}
	}
	sl.Annotations[v1.EndpointsLastChangeTriggerTime] = start.UTC().Format(time.RFC3339Nano)
	if _, err := c.DiscoveryV1().EndpointSlices(namespace).Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
		return err
	}
	updated := time.Since(start)
	count := "kubeproxy_sync_proxy_rules_duration_seconds_count"
	after, err := poll(ctx, url, func(m metrics) bool { return m.get(count) > before.get(count) })
	if err != nil {
		return err
	}
	end := after.get("kubeproxy_sync_proxy_rules_last_timestamp_seconds")
	wall := time.Unix(0, int64(end*1e9)).Sub(start)
	delta := func(name string) float64 { return after.get(name) - before.get(name) }
	kind := "partial"
	if delta("kubeproxy_sync_full_proxy_rules_duration_seconds_count") > 0 {
		kind = "full"
	}
	syncs := delta(count)
	npl := math.NaN()
	if d := delta("kubeproxy_network_programming_duration_seconds_count"); d > 0 {
		npl = 1000 * delta("kubeproxy_network_programming_duration_seconds_sum") / d
	}
	fmt.Printf("change %s %s->%s: update_ms=%.1f change_to_synced_ms=%.0f sync=%s syncs=%g sync_ms=%.0f network_programming_ms=%.0f\n",
		name, old, addr, updated.Seconds()*1000, wall.Seconds()*1000, kind, syncs,
		1000*delta("kubeproxy_sync_proxy_rules_duration_seconds_sum")/syncs, npl)
	return nil
}
