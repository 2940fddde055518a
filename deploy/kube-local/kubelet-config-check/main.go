// kubelet-config-check validates a KubeletConfiguration file the way the kubelet itself loads it:
// strict decoding with the kubelet's own scheme (unknown or misspelt fields are errors, not the
// kubelet's lenient fallback), defaulting, then the kubelet's ValidateKubeletConfiguration with
// the feature gates the file sets. Built by deploy/kube-local/build.sh from the same
// k8s.io/kubernetes release as the test kube-apiserver.
//
// One check of ValidateKubeletConfiguration is about the machine it runs on, not the file: with
// failCgroupV1 (true by default) it fails on a cgroup v1 host. Where this checker runs on cgroup v1
// it validates with failCgroupV1 off and says so on stderr; every other check is the kubelet's.
//
// Usage: kubelet-config-check FILE   (prints "valid" and exits 0, or the errors and exits 1)
package main

import (
	"fmt"
	"os"

	libcontainercgroups "github.com/opencontainers/cgroups"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	_ "k8s.io/kubernetes/pkg/features" // registers the kubelet's feature gates
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
	"k8s.io/kubernetes/pkg/kubelet/apis/config/validation"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kubelet-config-check FILE")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	_, codecs, err := kubeletscheme.NewSchemeAndCodecs(serializer.EnableStrict)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	obj, gvk, err := codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		fmt.Printf("decode: %v\n", err)
		os.Exit(1)
	}
	kc, ok := obj.(*kubeletconfig.KubeletConfiguration)
	if !ok {
		fmt.Printf("decode: %v is not a KubeletConfiguration\n", gvk)
		os.Exit(1)
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(kc.FeatureGates); err != nil {
		fmt.Printf("featureGates: %v\n", err)
		os.Exit(1)
	}
	if kc.FailCgroupV1 && !libcontainercgroups.IsCgroup2UnifiedMode() {
		fmt.Fprintln(os.Stderr, "note: this machine runs cgroup v1; failCgroupV1 (a check of the kubelet's host, not of the file) is not applied")
		kc.FailCgroupV1 = false
	}
	if err := validation.ValidateKubeletConfiguration(kc, utilfeature.DefaultFeatureGate); err != nil {
		fmt.Printf("validate: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("valid")
}
