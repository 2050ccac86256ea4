package v1alpha1

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// MemberClusterStatusApply builds a server-side-apply body for the status of a
// MemberCluster that holds only the fields in status (a struct with the json names of
// MemberClusterStatus). The hub applies status this way, so that it owns exactly the
// fields it writes.
func MemberClusterStatusApply(name string, status any) (*unstructured.Unstructured, error) {
	m, err := jsonObject(status)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": GroupVersion.String(), "kind": "MemberCluster",
		"metadata": map[string]any{"name": name}, "status": m,
	}}, nil
}

// MemberClusterReportApply builds the server-side-apply body of a cluster's
// MemberClusterReport: named after the cluster, in its hub namespace, labelled with it.
func MemberClusterReportApply(cluster string, facts ClusterFacts) (*unstructured.Unstructured, error) {
	m, err := jsonObject(facts)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": GroupVersion.String(), "kind": "MemberClusterReport",
		"metadata": map[string]any{"name": cluster, "namespace": ClusterNamespace(cluster),
			"labels": map[string]any{LabelCluster: cluster}},
		"facts": m,
	}}, nil
}

// jsonObject is v as a JSON object, with only the fields v's JSON encoding writes.
func jsonObject(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	return m, json.Unmarshal(b, &m)
}

// IsReady reports whether the cluster's Ready condition is True (a fresh heartbeat).
func (mc *MemberCluster) IsReady() bool {
	for _, c := range mc.Status.Conditions {
		if c.Type == ConditionReady {
			return c.Status == "True"
		}
	}
	return false
}
