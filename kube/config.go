package kube

import (
	"cmp"
	"errors"
	"fmt"

	"k8s.io/client-go/kubernetes"
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

// Connect is LoadConfig, then the cluster's client made by newClient (nil:
// kubernetes.NewForConfig; tests give a fake clientset).
func Connect(path, context, userAgent string, newClient func(*rest.Config) (kubernetes.Interface, error)) (client kubernetes.Interface, server, namespace string, err error) {
	cfg, server, namespace, err := LoadConfig(path, context, userAgent)
	if err != nil {
		return nil, "", "", err
	}
	if newClient == nil {
		newClient = func(cfg *rest.Config) (kubernetes.Interface, error) { return kubernetes.NewForConfig(cfg) }
	}
	if client, err = newClient(cfg); err != nil {
		return nil, "", "", fmt.Errorf("kube: %s: %w", server, err)
	}
	return client, server, namespace, nil
}
