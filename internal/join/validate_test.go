package join

import (
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	for _, tt := range []struct {
		name, wantErr string
	}{
		{"prod-eu-1", ""},
		{"", "required"},
		{"Prod", "invalid cluster name"},
		{"a_b", "invalid cluster name"},
		{strings.Repeat("a", 55), ""},
		{strings.Repeat("a", 56), "at most 55"},
	} {
		err := ValidateName(tt.name)
		if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("ValidateName(%q) = %v, want error containing %q", tt.name, err, tt.wantErr)
		}
	}
}

func TestParseLabels(t *testing.T) {
	for _, tt := range []struct {
		in, want, wantErr string
	}{
		{"", "", ""},
		{"env=prod,region=eu", "env=prod,region=eu", ""},
		{" flotilla.dev/ring=0 , env=dev", "env=dev,flotilla.dev/ring=0", ""},
		{"env=", "env=", ""},
		{"env", "", "want key=value"},
		{"bad key=x", "", "invalid label key"},
		{"env=no spaces", "", "invalid value"},
		{"env=a,env=b", "", "given twice"},
	} {
		got, err := ParseLabels(tt.in)
		if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("ParseLabels(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && FormatLabels(got) != tt.want {
			t.Errorf("ParseLabels(%q) = %q, want %q", tt.in, FormatLabels(got), tt.want)
		}
	}
}
