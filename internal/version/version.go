// Package version tells which Flotilla build is running.
package version

import "runtime/debug"

// Version is set at build time with -ldflags "-X flotilla.dev/flotilla/internal/version.Version=v0.1.0".
var Version = ""

// String returns the build's version: the ldflags value, else the VCS revision Go recorded,
// else "dev".
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}
