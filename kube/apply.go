package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// How ClusterRun checks the cluster, creates the run's objects and deletes
// them.

// ReachTimeout bounds ClusterRun.Check's first call: a cluster that does
// not answer in it is reported unreachable.
const ReachTimeout = 10 * time.Second

// object names an object as kubectl does: pod/NAME.
type object struct{ kind, name string }

func (o object) String() string { return o.kind + "/" + o.name }

func objectOf(obj runtime.Object) object {
	name := obj.(metav1.Object).GetName()
	switch obj.(type) {
	case *corev1.ConfigMap:
		return object{"configmap", name}
	case *corev1.PersistentVolumeClaim:
		return object{"persistentvolumeclaim", name}
	case *batchv1.Job:
		return object{"job", name}
	case *corev1.Pod:
		return object{"pod", name}
	}
	panic(fmt.Sprintf("kube: no object kind for %T", obj))
}

// objects are what the run creates, in order: the ConfigMap, the claim
// (unless Spec.Claim names one), the shards' Job, the merge Job and the
// fetch pod.
func (c *ClusterRun) objects() []runtime.Object {
	objs := []runtime.Object{c.spec.configMap()}
	if c.spec.Claim == "" {
		objs = append(objs, c.spec.claim())
	}
	return append(objs, c.spec.ShardsJob(), c.spec.MergeJob(), c.spec.fetchPod())
}

// Check reads the cluster without changing it: that it answers (within
// ReachTimeout), that the namespace exists, that none of the run's objects
// does (ErrExists), and that Spec.Claim, if given, exists with Spec's
// access mode.
func (c *ClusterRun) Check(ctx context.Context) error {
	if err := c.reach(ctx); err != nil {
		return err
	}
	for _, obj := range c.objects() {
		err := c.get(ctx, objectOf(obj))
		switch {
		case err == nil:
			return c.exists(objectOf(obj))
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("kube: %s: %w", objectOf(obj), err)
		}
	}
	if c.spec.Claim == "" {
		return nil
	}
	claim, err := c.client.CoreV1().PersistentVolumeClaims(c.spec.Namespace).Get(ctx, c.spec.Claim, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("--claim %s: no PersistentVolumeClaim %s in namespace %s: give an existing claim, or leave --claim out and the run creates its own", c.spec.Claim, c.spec.Claim, c.spec.Namespace)
	case err != nil:
		return fmt.Errorf("kube: --claim %s: %w", c.spec.Claim, err)
	case len(claim.Spec.AccessModes) > 0 && !slices.Contains(claim.Spec.AccessModes, c.spec.AccessMode):
		return fmt.Errorf("--claim %s has access modes %v, not --access-mode %s: give --access-mode %s (docs/kubernetes.md, the volume's access mode)",
			c.spec.Claim, claim.Spec.AccessModes, c.spec.AccessMode, claim.Spec.AccessModes[0])
	}
	return nil
}

// reach reads the namespace: a Forbidden answer is an answer.
func (c *ClusterRun) reach(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ReachTimeout)
	defer cancel()
	ns := c.spec.Namespace
	_, err := c.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	var status apierrors.APIStatus
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("kube: reaching %s: %w", c.server, err)
	case err == nil, apierrors.IsForbidden(err):
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("--namespace %s: no such namespace on %s: create it (kubectl create namespace %s) or give another --namespace", ns, c.server, ns)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("kube: %s refused the kubeconfig's credentials (%v): does `kubectl get pods` work with them? (--kubeconfig, --context)", c.server, err)
	case errors.As(err, &status):
		return fmt.Errorf("kube: %s: reading namespace %s: %w", c.server, ns, err)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%w: %s did not answer within %v: is the cluster up, and does `kubectl get pods` reach it? (--kubeconfig and --context choose another)", ErrUnreachable, c.server, ReachTimeout)
	default:
		return fmt.Errorf("%w: %s: %v: is the cluster up, and does `kubectl get pods` reach it? (--kubeconfig and --context choose another)", ErrUnreachable, c.server, err)
	}
}

// exists is the error for an object of the run's that exists already.
func (c *ClusterRun) exists(o object) error {
	ns := c.spec.Namespace
	return fmt.Errorf("%w: %s in namespace %s (left by an earlier run? kube run --keep keeps them): delete it with `kubectl -n %s delete %s`, or everything of that run with `kubectl -n %s delete job,pod,configmap,pvc -l %s=%s`, or give another --run-id or --name",
		ErrExists, o, ns, ns, o, ns, LabelInstance, c.spec.Name)
}

func (c *ClusterRun) get(ctx context.Context, o object) error {
	ns, get := c.spec.Namespace, metav1.GetOptions{}
	var err error
	switch o.kind {
	case "configmap":
		_, err = c.client.CoreV1().ConfigMaps(ns).Get(ctx, o.name, get)
	case "persistentvolumeclaim":
		_, err = c.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, o.name, get)
	case "job":
		_, err = c.client.BatchV1().Jobs(ns).Get(ctx, o.name, get)
	case "pod":
		_, err = c.client.CoreV1().Pods(ns).Get(ctx, o.name, get)
	}
	return err
}

// create creates obj and remembers it for Delete.
func (c *ClusterRun) create(ctx context.Context, obj runtime.Object) error {
	ns, opts := c.spec.Namespace, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
	var err error
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		_, err = c.client.CoreV1().ConfigMaps(ns).Create(ctx, o, opts)
	case *corev1.PersistentVolumeClaim:
		_, err = c.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, o, opts)
	case *batchv1.Job:
		_, err = c.client.BatchV1().Jobs(ns).Create(ctx, o, opts)
	case *corev1.Pod:
		_, err = c.client.CoreV1().Pods(ns).Create(ctx, o, opts)
	}
	switch {
	case apierrors.IsAlreadyExists(err):
		return c.exists(objectOf(obj))
	case err != nil:
		return fmt.Errorf("kube: creating %s: %w", objectOf(obj), err)
	}
	c.created = append(c.created, objectOf(obj))
	fmt.Fprintf(c.out, "created %s\n", objectOf(obj))
	return nil
}

// Create creates the run's ConfigMap, its claim (unless Spec.Claim names
// one) and the shards' Job, in that order; an object that exists already
// is not replaced (ErrExists).
func (c *ClusterRun) Create(ctx context.Context) error {
	objs := c.objects()
	for _, obj := range objs[:len(objs)-2] { // the merge and fetch come later
		if err := c.create(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// Created are the objects the run created so far, in order, as kubectl
// names them (job/NAME).
func (c *ClusterRun) Created() []string {
	names := make([]string, len(c.created))
	for i, o := range c.created {
		names[i] = o.String()
	}
	return names
}

// Delete deletes what the run created, last first: the Jobs with
// propagationPolicy Background, so that their pods go too, and a claim
// only if the run created it. An object already gone is not an error; one
// that could not be deleted stays in Created.
func (c *ClusterRun) Delete(ctx context.Context) error {
	ns := c.spec.Namespace
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	var errs []error
	var left []object
	for _, o := range slices.Backward(c.created) {
		var err error
		switch o.kind {
		case "configmap":
			err = c.client.CoreV1().ConfigMaps(ns).Delete(ctx, o.name, opts)
		case "persistentvolumeclaim":
			err = c.client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, o.name, opts)
		case "job":
			err = c.client.BatchV1().Jobs(ns).Delete(ctx, o.name, opts)
		case "pod":
			err = c.client.CoreV1().Pods(ns).Delete(ctx, o.name, opts)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("kube: deleting %s: %w", o, err))
			left = append([]object{o}, left...)
			continue
		}
		fmt.Fprintf(c.out, "deleted %s\n", o)
	}
	c.created = left
	return errors.Join(errs...)
}

// Cleanup deletes what the run created (Delete) on a context of its own
// bounded by timeout, since the run's may have been cancelled, unless keep;
// either way it says what on w, and after an interrupt it says first that
// the shards stop. An object it could not delete is named in the error
// with the kubectl command that deletes it.
func (c *ClusterRun) Cleanup(keep, interrupted bool, timeout time.Duration, w io.Writer) error {
	created := c.Created()
	if len(created) == 0 {
		return nil
	}
	ns := c.Namespace()
	if keep {
		slices.Reverse(created) // as Delete deletes them: the pods before the claim they hold
		fmt.Fprintf(w, "kept (--keep): %s; delete them with: kubectl -n %s delete %s\n",
			strings.Join(created, ", "), ns, strings.Join(created, " "))
		return nil
	}
	if interrupted {
		fmt.Fprintf(w, "\nzkbench: interrupted: deleting %s (the shards stop; Ctrl-C again to leave them)\n", strings.Join(created, ", "))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.Delete(ctx); err != nil {
		return fmt.Errorf("%w (left: kubectl -n %s delete %s)", err, ns, strings.Join(c.Created(), " "))
	}
	return nil
}
