// Command kubelet-config-validate checks a KubeletConfiguration
// (kubelet.config.k8s.io/v1beta1, YAML or JSON) the way the kubelet does when
// it loads its --config file: decoded with the kubelet's own scheme (so
// v1beta1 defaulting runs and the result is the internal type), then
// validated by the kubelet's ValidateKubeletConfiguration with the default
// feature gates merged with the file's featureGates.
//
// Usage: kubelet-config-validate [FILE]   (standard input when FILE is absent or "-")
//
// Exit status: 0 when the kubelet would accept the file, 1 when it would
// refuse it (or when a field is unknown: the kubelet only warns and ignores
// such a field, which is always a mistake in generated configuration),
// 2 on a usage or I/O error. Each error is printed on its own line.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"

	// Registers Kubernetes' feature gates (with their defaults) on the default gate.
	_ "k8s.io/kubernetes/pkg/features"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
	kubeletvalidation "k8s.io/kubernetes/pkg/kubelet/apis/config/validation"
	kubeletcodec "k8s.io/kubernetes/pkg/kubelet/kubeletconfig/util/codec"
)

func main() {
	// The kubelet's decoder logs its lenient fallback; the strict errors are reported here instead.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 1 {
		fmt.Fprintln(stderr, "usage: kubelet-config-validate [FILE]")
		return 2
	}
	name := "-"
	if len(args) == 1 {
		name = args[0]
	}
	data, err := read(name, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "kubelet-config-validate: %v\n", err)
		return 2
	}
	problems, err := validate(data)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(stderr, "%s: %s\n", name, p)
		}
		return 1
	}
	fmt.Fprintf(stdout, "%s: valid KubeletConfiguration\n", name)
	return 0
}

func read(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}

// validate returns every reason the kubelet would refuse data, or an error when it is not a
// KubeletConfiguration at all.
func validate(data []byte) ([]string, error) {
	_, strictCodecs, err := kubeletscheme.NewSchemeAndCodecs(serializer.EnableStrict)
	if err != nil {
		return nil, err
	}
	var problems []string
	// The kubelet decodes strictly first and, on unknown or duplicate fields, falls back to a
	// lenient decode with a warning; here those fields are errors.
	if _, _, err := strictCodecs.UniversalDecoder().Decode(data, nil, nil); err != nil {
		if !runtime.IsStrictDecodingError(err) {
			return nil, fmt.Errorf("cannot decode a KubeletConfiguration: %w", err)
		}
		if strict, ok := runtime.AsStrictDecodingError(err); ok {
			for _, e := range strict.Errors() {
				problems = append(problems, fmt.Sprintf("%v (the kubelet ignores it)", e))
			}
		} else {
			problems = append(problems, err.Error())
		}
	}
	kc, err := kubeletcodec.DecodeKubeletConfiguration(context.Background(), strictCodecs, data)
	if err != nil {
		return nil, err
	}
	problems = append(problems, validationErrors(kc)...)
	return problems, nil
}

func validationErrors(kc *kubeletconfig.KubeletConfiguration) []string {
	err := kubeletvalidation.ValidateKubeletConfiguration(kc, utilfeature.DefaultFeatureGate)
	if err == nil {
		return nil
	}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		out := make([]string, 0, len(agg.Errors()))
		for _, e := range utilerrors.Flatten(agg).Errors() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}
