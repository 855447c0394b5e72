package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/simnode"
)

// The rest of issue 3's acceptance item 4, through the real binary and
// kubectl on simulated nodes: StatefulSet, DaemonSet, Job (with Indexed
// completion and backoffLimit) and CronJob.

// TestStatefulSet: ordered pods with stable names, a claim per replica bound
// to a local PersistentVolume, scaling down from the highest ordinal, and a
// rolling update that rollout status, history and undo follow.
func TestStatefulSet(t *testing.T) {
	c := startSimCluster(t, simnode.Node{Name: "n1"}, simnode.Node{Name: "n2"})
	for i := range 3 {
		c.KubectlIn(t, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-%d}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  hostPath: {path: /tmp/pv-%d}
`, i, i), "apply", "-f", "-")
	}
	c.KubectlIn(t, `apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - {name: db, image: registry.example/db:1, volumeMounts: [{name: data, mountPath: /data}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: manual
      resources: {requests: {storage: 1Gi}}
`, "apply", "-f", "-")
	c.Kubectl(t, "rollout", "status", "statefulset/db", "--timeout=90s")
	if got := c.podNames(t, "app=db"); got != "db-0 db-1 db-2" {
		t.Fatalf("statefulset pods %q, want db-0 db-1 db-2", got)
	}
	claims := c.Kubectl(t, "get", "pvc", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.phase} {end}")
	for i := range 3 {
		if !strings.Contains(claims, fmt.Sprintf("data-db-%d=Bound", i)) {
			t.Errorf("claim data-db-%d is not Bound: %s", i, claims)
		}
	}
	if host := c.Kubectl(t, "get", "pod", "db-1", "-o", "jsonpath={.spec.hostname}.{.spec.subdomain}"); host != "db-1.db" {
		t.Errorf("db-1 hostname.subdomain = %q, want db-1.db", host)
	}

	c.Kubectl(t, "scale", "statefulset/db", "--replicas=1")
	eventually(t, 60*time.Second, func() string {
		if got := c.podNames(t, "app=db"); got != "db-0" {
			return fmt.Sprintf("pods %q after scaling to 1, want db-0", got)
		}
		return ""
	})
	c.Kubectl(t, "scale", "statefulset/db", "--replicas=3")
	c.Kubectl(t, "rollout", "status", "statefulset/db", "--timeout=90s")

	c.Kubectl(t, "set", "image", "statefulset/db", "db=registry.example/db:2")
	c.Kubectl(t, "rollout", "status", "statefulset/db", "--timeout=90s")
	if images := c.Kubectl(t, "get", "pods", "-l", "app=db", "-o", "jsonpath={.items[*].spec.containers[0].image}"); strings.Count(images, "db:2") != 3 {
		t.Errorf("after the rolling update the pods run %q, want db:2 everywhere", images)
	}
	history := c.Kubectl(t, "rollout", "history", "statefulset/db")
	if !strings.Contains(history, "1 ") || !strings.Contains(history, "2 ") {
		t.Errorf("rollout history has no revisions 1 and 2:\n%s", history)
	}
	c.Kubectl(t, "rollout", "undo", "statefulset/db")
	c.Kubectl(t, "rollout", "status", "statefulset/db", "--timeout=90s")
	eventually(t, 60*time.Second, func() string {
		images := c.Kubectl(t, "get", "pods", "-l", "app=db", "-o", "jsonpath={.items[*].spec.containers[0].image}")
		if strings.Count(images, "db:1") != 3 {
			return fmt.Sprintf("after undo the pods run %q, want db:1 everywhere", images)
		}
		return ""
	})
}

// TestDaemonSet: one pod per node that tolerates its taints, a pod for a
// node that joins, and a rolling update.
func TestDaemonSet(t *testing.T) {
	c := startSimCluster(t,
		simnode.Node{Name: "n1"}, simnode.Node{Name: "n2"},
		simnode.Node{Name: "n3", Taints: []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}})
	c.KubectlIn(t, `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: registry.example/agent:1}]
`, "apply", "-f", "-")
	c.Kubectl(t, "rollout", "status", "daemonset/agent", "--timeout=90s")
	if perNode := c.podsBy(t, "default", "app=agent", 2); perNode["n1"] != 1 || perNode["n2"] != 1 {
		t.Fatalf("daemon pods on %v, want one on n1 and one on n2 (n3's taint is not tolerated)", perNode)
	}
	c.addNode(t, simnode.Node{Name: "n4"})
	defer func() {
		if t.Failed() {
			t.Log(c.Kubectl(t, "get", "pods", "-o", "yaml"))
		}
	}()
	if perNode := c.podsBy(t, "default", "app=agent", 3); perNode["n4"] != 1 {
		t.Fatalf("daemon pods on %v, want one on the new node n4", perNode)
	}
	c.Kubectl(t, "set", "image", "daemonset/agent", "agent=registry.example/agent:2")
	c.Kubectl(t, "rollout", "status", "daemonset/agent", "--timeout=90s")
	eventually(t, 60*time.Second, func() string {
		images := c.Kubectl(t, "get", "pods", "-l", "app=agent", "-o", "jsonpath={.items[*].spec.containers[0].image}")
		if strings.Count(images, "agent:2") != 3 || strings.Count(images, "agent:1") != 0 {
			return fmt.Sprintf("after the update the daemon pods run %q, want agent:2 on each of 3 nodes", images)
		}
		return ""
	})
	status := c.Kubectl(t, "get", "daemonset", "agent", "-o", "jsonpath={.status.desiredNumberScheduled} {.status.numberReady} {.status.updatedNumberScheduled}")
	if status != "3 3 3" {
		t.Errorf("daemonset status desired/ready/updated = %q, want 3 3 3", status)
	}
}

// jobYAML renders a Job whose simulated pods exit with the given phase.
func jobYAML(name, spec, finish string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: %s}
spec:
%s
  template:
    metadata:
      annotations: {%s: %s}
    spec:
      restartPolicy: Never
      containers: [{name: work, image: registry.example/work:1}]
`, name, spec, simnode.FinishAnnotation, finish)
}

// TestJobs: a job runs its completions with the parallelism asked, an
// Indexed job completes every index once, and a job whose pods keep failing
// stops at its backoffLimit with the Failed condition.
func TestJobs(t *testing.T) {
	c := startSimCluster(t, simnode.Node{Name: "n1"}, simnode.Node{Name: "n2"})
	c.KubectlIn(t, jobYAML("batch", "  completions: 4\n  parallelism: 2", "Succeeded"), "apply", "-f", "-")
	c.KubectlIn(t, jobYAML("indexed", "  completions: 3\n  parallelism: 3\n  completionMode: Indexed", "Succeeded"), "apply", "-f", "-")
	c.KubectlIn(t, jobYAML("failing", "  backoffLimit: 1", "Failed"), "apply", "-f", "-")

	c.Kubectl(t, "wait", "--for=condition=Complete", "job/batch", "job/indexed", "--timeout=90s")
	if got := c.Kubectl(t, "get", "job", "batch", "-o", "jsonpath={.status.succeeded}"); got != "4" {
		t.Errorf("job batch succeeded %s times, want 4", got)
	}
	if got := c.Kubectl(t, "get", "job", "indexed", "-o", "jsonpath={.status.completedIndexes}"); got != "0-2" {
		t.Errorf("indexed job completedIndexes %q, want 0-2", got)
	}
	indexes := strings.Fields(c.Kubectl(t, "get", "pods", "-l", "batch.kubernetes.io/job-name=indexed",
		"-o", `jsonpath={range .items[*]}{.metadata.annotations.batch\.kubernetes\.io/job-completion-index}{" "}{end}`))
	sort.Strings(indexes)
	if strings.Join(indexes, ",") != "0,1,2" {
		t.Errorf("indexed job pods have completion indexes %v, want 0,1,2", indexes)
	}

	c.Kubectl(t, "wait", "--for=condition=Failed", "job/failing", "--timeout=90s")
	failed := c.Kubectl(t, "get", "job", "failing", "-o", `jsonpath={.status.failed} {.status.conditions[?(@.type=="Failed")].reason}`)
	if failed != "2 BackoffLimitExceeded" {
		t.Errorf("failing job: failed count and reason %q, want 2 BackoffLimitExceeded", failed)
	}
}

// TestCronJob: a cronjob that runs every minute starts a job named after its
// schedule time, and records the run in its status once the job completes.
func TestCronJob(t *testing.T) {
	c := startSimCluster(t, simnode.Node{Name: "n1"})
	c.KubectlIn(t, fmt.Sprintf(`apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        metadata:
          annotations: {%s: Succeeded}
        spec:
          restartPolicy: Never
          containers: [{name: tick, image: registry.example/tick:1}]
`, simnode.FinishAnnotation), "apply", "-f", "-")
	eventually(t, 90*time.Second, func() string {
		got := c.Kubectl(t, "get", "cronjob", "tick", "-o", "jsonpath={.status.lastScheduleTime} {.status.lastSuccessfulTime}")
		if len(strings.Fields(got)) == 2 {
			return ""
		}
		return fmt.Sprintf("cronjob status lastScheduleTime and lastSuccessfulTime: %q", got)
	})
	jobs, err := c.client.BatchV1().Jobs("default").List(c.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) == 0 {
		t.Fatal("no job from the cronjob")
	}
	job := jobs.Items[0]
	scheduled, err := time.Parse(time.RFC3339, job.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"])
	if err != nil {
		t.Fatalf("job %s has no scheduled-timestamp annotation: %v", job.Name, err)
	}
	if want := fmt.Sprintf("tick-%d", scheduled.Unix()/60); job.Name != want {
		t.Errorf("job is named %s, want %s (the schedule time in minutes)", job.Name, want)
	}
	if ref := metav1.GetControllerOf(&job); ref == nil || ref.Kind != "CronJob" || ref.Name != "tick" {
		t.Errorf("job %s is not controlled by the cronjob: %v", job.Name, job.OwnerReferences)
	}
}

// podNames returns the sorted names of the pods in the default namespace
// matching selector that are not being deleted.
func (c *simCluster) podNames(t *testing.T, selector string) string {
	t.Helper()
	pods, err := c.client.CoreV1().Pods("default").List(c.ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}
