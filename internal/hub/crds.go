package hub

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"flotilla.dev/flotilla/config/crd"
)

// CRDs returns Flotilla's embedded CustomResourceDefinitions.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(crd.Bases, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		b, err := crd.Bases.ReadFile(f)
		if err != nil {
			return nil, err
		}
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, c); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// InstallCRDs creates or updates Flotilla's CRDs on the hub and waits until they are
// Established, so controllers and users can use the kinds right away.
func InstallCRDs(ctx context.Context, cfg *rest.Config) error {
	cs, err := apiextclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds, err := CRDs()
	if err != nil {
		return err
	}
	for _, c := range crds {
		c.APIVersion, c.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		body, err := yaml.Marshal(c)
		if err != nil {
			return err
		}
		force := true
		if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, c.Name, "application/apply-patch+yaml", body,
			metav1.PatchOptions{FieldManager: "flotilla-hub", Force: &force}); err != nil {
			return fmt.Errorf("install CRD %s: %w", c.Name, err)
		}
	}
	for _, c := range crds {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, c.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", c.Name, err)
		}
	}
	return nil
}
