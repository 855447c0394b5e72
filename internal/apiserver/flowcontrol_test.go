package apiserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	flowcontrolv1apply "k8s.io/client-go/applyconfigurations/flowcontrol/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/apfbootstrap"
)

// TestFlowControl drives flowcontrol.apiserver.k8s.io/v1 through the
// handlers with upstream's bootstrap configuration: what the ensurer writes
// passes validation, the mandatory objects keep their spec, a suggested one
// a user changes is put back unless auto-update is off, the status
// subresource, and the tables.
func TestFlowControl(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "")
	schemas, levels := client.FlowcontrolV1().FlowSchemas(), client.FlowcontrolV1().PriorityLevelConfigurations()

	if err := apfbootstrap.Ensure(ctx, client); err != nil {
		t.Fatal(err)
	}
	fsList, err := schemas.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plList, err := levels.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fsList.Items) != 11 || len(plList.Items) != 8 {
		t.Errorf("%d flow schemas and %d priority levels, want upstream's 11 and 8", len(fsList.Items), len(plList.Items))
	}
	for _, fs := range fsList.Items {
		if fs.Generation != 1 || fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("flow schema %s: generation %d, annotations %v", fs.Name, fs.Generation, fs.Annotations)
		}
	}

	// The mandatory objects keep their spec.
	catchAll, err := schemas.Get(ctx, "catch-all", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	catchAll.Spec.MatchingPrecedence = 9000
	if _, err := schemas.Update(ctx, catchAll, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec of 'catch-all' must equal the fixed value") {
		t.Errorf("catch-all changed: %v, want Invalid", err)
	}
	exempt, err := levels.Get(ctx, "exempt", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	exempt.Spec.Exempt.NominalConcurrencyShares = ptr.To[int32](5)
	if exempt, err = levels.Update(ctx, exempt, metav1.UpdateOptions{}); err != nil || exempt.Generation != 2 {
		t.Errorf("the exempt level's exempt numbers may change: %v", err)
	}

	// A suggested schema changed by a user goes back, unless its
	// auto-update is off.
	global, err := schemas.Get(ctx, "global-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	global.Spec.MatchingPrecedence = 9000
	if _, err := schemas.Update(ctx, global, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	workloadLow, err := levels.Get(ctx, "workload-low", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	workloadLow.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](0)
	workloadLow.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
	if _, err := levels.Update(ctx, workloadLow, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := apfbootstrap.Ensure(ctx, client); err != nil {
		t.Fatal(err)
	}
	if global, err = schemas.Get(ctx, "global-default", metav1.GetOptions{}); err != nil || global.Spec.MatchingPrecedence != 9900 || global.Generation != 3 {
		t.Errorf("global-default after a pass: %v, precedence %d, generation %d; want 9900 again, generation 3", err, global.Spec.MatchingPrecedence, global.Generation)
	}
	if workloadLow, err = levels.Get(ctx, "workload-low", metav1.GetOptions{}); err != nil || *workloadLow.Spec.Limited.NominalConcurrencyShares != 0 {
		t.Errorf("workload-low after a pass: %v, shares %v; want the user's 0", err, workloadLow.Spec.Limited.NominalConcurrencyShares)
	}
	if exempt, err = levels.Get(ctx, "exempt", metav1.GetOptions{}); err != nil || *exempt.Spec.Exempt.NominalConcurrencyShares != 5 {
		t.Errorf("exempt after a pass: %v, want its shares of 5 kept", err)
	}

	// A new level is defaulted; its status is written through /status only.
	team, err := levels.Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}},
		}},
		Status: flowcontrolv1.PriorityLevelConfigurationStatus{Conditions: []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "Made", Status: flowcontrolv1.ConditionTrue}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := team.Spec.Limited.LimitResponse.Queuing; *team.Spec.Limited.NominalConcurrencyShares != 30 || q.Queues != 64 || q.HandSize != 8 || q.QueueLengthLimit != 50 || len(team.Status.Conditions) != 0 {
		t.Errorf("created: %+v %+v", team.Spec.Limited, team.Status)
	}
	team.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "Checked", Status: flowcontrolv1.ConditionTrue}}
	team.Spec.Limited.LendablePercent = ptr.To[int32](50)
	if team, err = levels.UpdateStatus(ctx, team, metav1.UpdateOptions{}); err != nil || len(team.Status.Conditions) != 1 || *team.Spec.Limited.LendablePercent != 0 {
		t.Errorf("status update: %v %+v", err, team)
	}
	team.Spec.Limited = nil
	if _, err := levels.Update(ctx, team, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.limited: Required value") {
		t.Errorf("a limited level without its member: %v", err)
	}

	// Server-side apply knows the type.
	apply := flowcontrolv1apply.FlowSchema("team-a").WithSpec(flowcontrolv1apply.FlowSchemaSpec().
		WithPriorityLevelConfiguration(flowcontrolv1apply.PriorityLevelConfigurationReference().WithName("team-a")).
		WithRules(flowcontrolv1apply.PolicyRulesWithSubjects().
			WithSubjects(flowcontrolv1apply.Subject().WithKind(flowcontrolv1.SubjectKindGroup).WithGroup(flowcontrolv1apply.GroupSubject().WithName("team-a"))).
			WithNonResourceRules(flowcontrolv1apply.NonResourcePolicyRule().WithVerbs("get").WithNonResourceURLs("/metrics"))))
	if applied, err := schemas.Apply(ctx, apply, metav1.ApplyOptions{FieldManager: "test"}); err != nil || applied.Spec.MatchingPrecedence != 1000 {
		t.Errorf("applied: %v %+v", err, applied)
	}

	// kubectl get flowschemas lists them by matching precedence.
	body, err := client.FlowcontrolV1().RESTClient().Get().Resource("flowschemas").SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range table.Rows {
		rows = append(rows, r.Cells[0].(string))
	}
	want := "exempt probes system-leader-election system-node-high system-nodes kube-controller-manager kube-scheduler kube-system-service-accounts team-a service-accounts global-default catch-all"
	if got := strings.Join(rows, " "); got != want {
		t.Errorf("flow schemas in the table: %s", got)
	}
	if cells := table.Rows[0].Cells; len(cells) != 6 || cells[1] != "exempt" || cells[2] != float64(1) || cells[3] != "<none>" || cells[5] != "?" {
		t.Errorf("exempt's row: %v", cells)
	}

	// kubectl explain finds the types.
	doc, err := client.FlowcontrolV1().RESTClient().Get().AbsPath("/openapi/v3/apis/flowcontrol.apiserver.k8s.io/v1").DoRaw(ctx)
	if err != nil || !strings.Contains(string(doc), `"io.k8s.api.flowcontrol.v1.PriorityLevelConfiguration"`) {
		t.Errorf("openapi v3 document of flowcontrol.apiserver.k8s.io/v1: %v %.200s", err, doc)
	}
}
