package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The API server's priority-and-fairness objects the throttle scenario adds for its
// duration: the hub's requests go to a priority level of one seat that rejects (429) what
// does not fit, instead of queueing it.
const (
	throttleLevel   = "flotilla-bench-throttled"
	throttleBallast = "flotilla-bench-ballast" // no flow: it only shrinks every level's share
	throttleSchema  = "flotilla-bench-hub"
	// agentsSchema sends the simulated agents to the exempt level while the hub is throttled:
	// the ballast shrinks every limited level, theirs too, and the scenario measures the hub.
	agentsSchema = "flotilla-bench-agents"
	// ballastShares makes the throttled level's one share worth a single seat of the API
	// server's 600 (ceil(600 × 1 / (10,000 + the built-in levels' 245))).
	ballastShares = 10000
)

// throttleScenario makes one change unthrottled, then the same kind of change while the API
// server admits one hub request at a time and rejects the rest with 429, and reports what
// throttling cost: the time against the unthrottled change, how many requests were rejected,
// how many hub reconciles failed and were retried, and that every cluster still applied
// the change (the scenario fails otherwise).
func (f *Fleet) throttleScenario(ctx context.Context) (Result, error) {
	const name = "throttle"
	if err := f.warmBundle(ctx, name); err != nil {
		return Result{}, err
	}
	free, _, err := f.change(ctx, name, "unthrottled")
	if err != nil {
		return Result{}, err
	}
	if err := f.e.throttleHub(ctx); err != nil {
		return Result{}, fmt.Errorf("throttle the hub: %w", err)
	}
	removed := false
	defer func() {
		if !removed {
			_ = f.e.unthrottleHub(context.WithoutCancel(ctx))
		}
	}()
	before, err := f.e.throttleCounts(ctx)
	if err != nil {
		return Result{}, err
	}
	slow, reached, err := f.change(ctx, name, "throttled")
	if err != nil {
		return Result{}, err
	}
	after, err := f.e.throttleCounts(ctx)
	if err != nil {
		return Result{}, err
	}
	removed = true
	if err := f.e.unthrottleHub(ctx); err != nil {
		return Result{}, fmt.Errorf("remove the throttle: %w", err)
	}
	r := f.result(ScenarioThrottle)
	r.seconds("unthrottled: total", free[len(free)-1])
	r.seconds("throttled: reached the agents", reached[len(reached)-1])
	r.seconds("throttled: total", slow[len(slow)-1])
	r.add("throttled / unthrottled", slow[len(slow)-1].Seconds()/free[len(free)-1].Seconds(), "x")
	r.add("hub requests rejected (429)", after.rejected-before.rejected, "")
	r.add("hub requests answered 429 (the hub's client)", after.hub429-before.hub429, "")
	r.add("hub Bundle reconciles failed and retried", after.failed-before.failed, "")
	r.add("clusters that applied the change", float64(len(slow)), "")
	return r, nil
}

// throttleHub installs the priority level, its ballast and the FlowSchema that sends the
// hub's ServiceAccount to it, and waits until the API server applies them.
func (e *Env) throttleHub(ctx context.Context) error {
	fc := e.Clientset.FlowcontrolV1()
	reject := &flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
	for _, pl := range []*flowcontrolv1.PriorityLevelConfiguration{
		{ObjectMeta: metav1.ObjectMeta{Name: throttleLevel}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](1),
				LendablePercent: ptr.To[int32](0), BorrowingLimitPercent: ptr.To[int32](0), LimitResponse: *reject}}},
		{ObjectMeta: metav1.ObjectMeta{Name: throttleBallast}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](ballastShares),
				LendablePercent: ptr.To[int32](0), BorrowingLimitPercent: ptr.To[int32](0), LimitResponse: *reject}}},
	} {
		if _, err := fc.PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: throttleSchema}, Spec: flowcontrolv1.FlowSchemaSpec{
		PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: throttleLevel},
		MatchingPrecedence:         100, // before the built-in service-accounts schema (9000)
		DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
		Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount,
				ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: hubServiceAccountNamespace, Name: hubServiceAccount}}},
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
				ClusterScope: true, Namespaces: []string{"*"}}},
			NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
		}}}}
	if _, err := fc.FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
		return err
	}
	agents := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: agentsSchema}, Spec: flowcontrolv1.FlowSchemaSpec{
		PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: flowcontrolv1.PriorityLevelConfigurationNameExempt},
		MatchingPrecedence:         200, // after the hub's
		Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup,
				Group: &flowcontrolv1.GroupSubject{Name: "system:serviceaccounts"}}},
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
				ClusterScope: true, Namespaces: []string{"*"}}},
		}}}}
	if _, err := fc.FlowSchemas().Create(ctx, agents, metav1.CreateOptions{}); err != nil {
		return err
	}
	// The API server publishes a level's seats once its configuration took effect.
	deadline := time.Now().Add(time.Minute)
	for {
		fams, err := e.apiMetrics(ctx)
		if err != nil {
			return err
		}
		if v, ok := gauge(fams, "apiserver_flowcontrol_nominal_limit_seats", "priority_level", throttleLevel); ok {
			if v != 1 {
				return fmt.Errorf("priority level %s has %v seats, want 1", throttleLevel, v)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("priority level %s not in effect after 1 min", throttleLevel)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// unthrottleHub removes what throttleHub installed.
func (e *Env) unthrottleHub(ctx context.Context) error {
	fc := e.Clientset.FlowcontrolV1()
	errs := []error{fc.FlowSchemas().Delete(ctx, throttleSchema, metav1.DeleteOptions{}),
		fc.FlowSchemas().Delete(ctx, agentsSchema, metav1.DeleteOptions{}),
		fc.PriorityLevelConfigurations().Delete(ctx, throttleLevel, metav1.DeleteOptions{}),
		fc.PriorityLevelConfigurations().Delete(ctx, throttleBallast, metav1.DeleteOptions{})}
	for _, err := range errs {
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

type throttleCounts struct{ rejected, hub429, failed float64 }

// throttleCounts reads the API server's rejections in the throttled level, the 429 answers
// the hub's client received, and the Bundle reconciles that returned an error.
func (e *Env) throttleCounts(ctx context.Context) (throttleCounts, error) {
	var c throttleCounts
	api, err := e.apiMetrics(ctx)
	if err != nil {
		return c, err
	}
	c.rejected = counterSum(api, "apiserver_flowcontrol_rejected_requests_total", "priority_level", throttleLevel)
	hubFams, err := e.hubMetrics(ctx)
	if err != nil {
		return c, err
	}
	c.hub429 = counterSum(hubFams, "rest_client_requests_total", "code", "429")
	c.failed = counterSum(hubFams, "controller_runtime_reconcile_errors_total", "controller", "bundle")
	return c, nil
}

// hubThrottled starts counting the 429 answers the hub's client receives; the function it
// returns says how many came since (-1 when the hub's metrics could not be read).
func (e *Env) hubThrottled(ctx context.Context) func() float64 {
	count := func() float64 {
		fams, err := e.hubMetrics(ctx)
		if err != nil {
			return -1
		}
		return counterSum(fams, "rest_client_requests_total", "code", "429")
	}
	before := count()
	return func() float64 {
		after := count()
		if before < 0 || after < 0 {
			return -1
		}
		return after - before
	}
}

// apiMetrics reads the API server's /metrics.
func (e *Env) apiMetrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	body, err := e.Clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("API server metrics: %w", err)
	}
	return parseMetrics(string(body))
}

func parseMetrics(text string) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return fams, nil
}

// counterSum adds the counters of family whose label has value.
func counterSum(fams map[string]*dto.MetricFamily, family, label, value string) float64 {
	sum := 0.0
	for _, m := range fams[family].GetMetric() {
		if labelValue(m, label) == value {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// gauge is the value of family's gauge whose label has value, if there is one.
func gauge(fams map[string]*dto.MetricFamily, family, label, value string) (float64, bool) {
	for _, m := range fams[family].GetMetric() {
		if labelValue(m, label) == value {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
