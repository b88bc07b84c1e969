package kube

import (
	"cmp"
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// LoadConfig loads the kubeconfig as kubectl does ($KUBECONFIG, else
// ~/.kube/config; path and context, when given, override; in a pod, its
// service account) for a client that calls itself userAgent, and says
// which server (with the context's name) and namespace it names.
func LoadConfig(path, context, userAgent string) (cfg *rest.Config, server, namespace string, err error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	cfg, err = cc.ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, "", "", errors.New("no kubeconfig: give --kubeconfig PATH, set $KUBECONFIG, or write ~/.kube/config (the file kubectl reads; `kubectl config view` shows it)")
	case err != nil:
		return nil, "", "", fmt.Errorf("kubeconfig: %w (`kubectl config view` shows what kubectl reads; --kubeconfig and --context choose another)", err)
	}
	cfg.UserAgent = userAgent
	server = cfg.Host
	if raw, err := cc.RawConfig(); err == nil {
		if name := cmp.Or(context, raw.CurrentContext); name != "" {
			server += " (context " + name + ")"
		}
	}
	namespace, _, err = cc.Namespace()
	if err != nil {
		return nil, "", "", fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, server, namespace, nil
}
