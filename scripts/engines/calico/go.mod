module winfleet.local/engines/calico

go 1.24.0

require (
	github.com/containernetworking/cni v1.2.0
	github.com/projectcalico/calico v1.11.0-cni-plugin.0.20250813170300-a0db560f0520
)

require github.com/Masterminds/semver/v3 v3.2.1 // indirect
