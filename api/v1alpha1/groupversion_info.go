// Package v1alpha1 holds Flotilla's API types (group flotilla.dev, version v1alpha1).
// +kubebuilder:object:generate=true
// +groupName=flotilla.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every Flotilla kind.
	GroupVersion = schema.GroupVersion{Group: "flotilla.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
