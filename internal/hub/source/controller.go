// Package source is the hub's GitRepository controller: it resolves each repository's ref,
// fetches the commit into the hub's local cache (internal/gitsource) and records it in the
// status, which the bundle controller renders Bundles from. A failed fetch keeps the last
// good commit, so Bundles keep running it. A webhook (webhook.go) fetches at once.
package source

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/gitsource"
)

// Defaults of a GitRepository's optional fields.
const (
	DefaultInterval = 5 * time.Minute
	DefaultTimeout  = 60 * time.Second
	// AcceptCommitAnnotation accepts a rewritten branch head (after a force-push) by its SHA.
	AcceptCommitAnnotation = "flotilla.dev/accept-commit"
)

// Reconciler fetches GitRepositories.
type Reconciler struct {
	Client client.Client
	// APIReader reads credential Secrets uncached: the hub does not cache every Secret.
	APIReader client.Reader
	Cache     *gitsource.Cache
	// Trigger receives webhook calls: each enqueues its repository at once.
	Trigger chan event.GenericEvent
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if r.Trigger == nil {
		r.Trigger = make(chan event.GenericEvent, 64)
	}
	return ctrl.ControllerManagedBy(mgr).
		Named("gitrepository").
		For(&flv1.GitRepository{}, ctrl.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WatchesRawSource(crsource.Channel(r.Trigger, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// Reconcile fetches one repository and records the result.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	repo := &flv1.GitRepository{}
	if err := r.Client.Get(ctx, req.NamespacedName, repo); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	before := repo.Status.DeepCopy()
	interval := DefaultInterval
	if repo.Spec.Interval != nil {
		interval = repo.Spec.Interval.Duration
	}
	now := metav1.Now()
	repo.Status.LastFetchTime = &now
	art, err := r.fetch(ctx, repo)
	setConditions(repo, art, err)
	if err == nil {
		if repo.Status.Artifact == nil || repo.Status.Artifact.Commit != art.Commit {
			art.FetchedAt = now
			repo.Status.Artifact = art
		}
	}
	repo.Status.ObservedGeneration = repo.Generation
	if !equality.Semantic.DeepEqual(before, &repo.Status) {
		if err := r.Client.Status().Patch(ctx, repo, client.MergeFrom(&flv1.GitRepository{ObjectMeta: repo.ObjectMeta, Status: *before})); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: interval}, nil
}

// fetch resolves and fetches the ref; a branch that moved to a commit not descending from
// the last one (a force-push) is refused unless its new head is accepted by annotation.
func (r *Reconciler) fetch(ctx context.Context, repo *flv1.GitRepository) (*flv1.GitArtifact, error) {
	auth, err := r.auth(ctx, repo)
	if err != nil {
		return nil, err
	}
	timeout := DefaultTimeout
	if repo.Spec.Timeout != nil {
		timeout = repo.Spec.Timeout.Duration
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ref := gitsource.Ref{}
	if s := repo.Spec.Ref; s != nil {
		ref = gitsource.Ref{Branch: s.Branch, Tag: s.Tag, SemVer: s.SemVer, Commit: s.Commit}
	}
	res, err := r.Cache.Fetch(ctx, repo.Spec.URL, ref, auth)
	if err != nil {
		return nil, err
	}
	art := &flv1.GitArtifact{Ref: res.Ref, Commit: res.Commit, Message: res.Message, Author: res.Author}
	prev := repo.Status.Artifact
	if prev != nil && prev.Ref == res.Ref && prev.Commit != res.Commit && ref.Tag == "" && ref.SemVer == "" && ref.Commit == "" {
		ok, err := r.Cache.Descends(repo.Spec.URL, res.Commit, prev.Commit)
		if err != nil {
			return nil, err
		}
		if !ok && repo.Annotations[AcceptCommitAnnotation] != res.Commit {
			return nil, &rewrittenError{branch: res.Ref, from: prev.Commit, to: res.Commit}
		}
	}
	return art, nil
}

type rewrittenError struct{ branch, from, to string }

func (e *rewrittenError) Error() string {
	return fmt.Sprintf("branch %s was rewritten (force-push): %s does not descend from %s; "+
		"to take the new history, annotate the GitRepository %s=%s", e.branch, e.to[:12], e.from[:12], AcceptCommitAnnotation, e.to)
}

// auth builds credentials from spec.secretRef.
func (r *Reconciler) auth(ctx context.Context, repo *flv1.GitRepository) (transport.AuthMethod, error) {
	if repo.Spec.SecretRef == nil {
		return nil, nil
	}
	s := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: repo.Namespace, Name: repo.Spec.SecretRef.Name}, s); err != nil {
		return nil, &secretError{fmt.Errorf("secret %s: %w", repo.Spec.SecretRef.Name, err)}
	}
	d := s.Data
	switch {
	case len(d["identity"]) > 0:
		if len(d["known_hosts"]) == 0 {
			return nil, &secretError{fmt.Errorf("secret %s has an SSH identity but no known_hosts: the server's key must be pinned", s.Name)}
		}
		user := string(d["username"])
		if user == "" {
			user = "git"
		}
		keys, err := gitssh.NewPublicKeys(user, d["identity"], string(d["password"]))
		if err != nil {
			return nil, &secretError{fmt.Errorf("secret %s: identity: %w", s.Name, err)}
		}
		cb, err := knownHostsCallback(d["known_hosts"])
		if err != nil {
			return nil, &secretError{fmt.Errorf("secret %s: known_hosts: %w", s.Name, err)}
		}
		keys.HostKeyCallback = cb
		return keys, nil
	case len(d["bearerToken"]) > 0:
		return &http.TokenAuth{Token: string(d["bearerToken"])}, nil
	case len(d["password"]) > 0:
		user := string(d["username"])
		if user == "" {
			user = "git" // token-as-password hosts accept any user name
		}
		return &http.BasicAuth{Username: user, Password: string(d["password"])}, nil
	}
	return nil, &secretError{fmt.Errorf("secret %s has none of password, bearerToken or identity", s.Name)}
}

func knownHostsCallback(data []byte) (ssh.HostKeyCallback, error) {
	f, err := writeTemp(data)
	if err != nil {
		return nil, err
	}
	return knownhosts.New(f)
}

type secretError struct{ err error }

func (e *secretError) Error() string { return e.err.Error() }
func (e *secretError) Unwrap() error { return e.err }

// setConditions: Ready says whether the artifact is the ref's current commit; Stalled whether
// a person must change something (credentials, ref, a rewritten branch).
func setConditions(repo *flv1.GitRepository, art *flv1.GitArtifact, err error) {
	ready := metav1.Condition{Type: flv1.ConditionReady, Status: metav1.ConditionTrue, Reason: flv1.ReasonFetched, ObservedGeneration: repo.Generation}
	stalled := metav1.Condition{Type: flv1.ConditionStalled, Status: metav1.ConditionFalse, Reason: flv1.ReasonFetched, ObservedGeneration: repo.Generation}
	var rw *rewrittenError
	var se *secretError
	switch {
	case err == nil:
		ready.Message = fmt.Sprintf("%s at %s: %s", art.Ref, art.Commit[:12], art.Message)
		stalled.Message = "fetched"
	case errors.As(err, &rw):
		ready.Reason = flv1.ReasonHistoryRewritten
	case errors.As(err, &se):
		ready.Reason = flv1.ReasonInvalidSecret
	case errors.Is(err, gitsource.ErrAuth):
		ready.Reason = flv1.ReasonAuthFailed
	case errors.Is(err, gitsource.ErrRefNotFound):
		ready.Reason = flv1.ReasonRefNotFound
	default:
		ready.Reason = flv1.ReasonFetchFailed
	}
	if err != nil {
		ready.Status, ready.Message = metav1.ConditionFalse, err.Error()
		if repo.Status.Artifact != nil {
			ready.Message += fmt.Sprintf("; Bundles keep using %s", repo.Status.Artifact.Commit[:12])
		}
		if ready.Reason != flv1.ReasonFetchFailed {
			stalled.Status, stalled.Reason, stalled.Message = metav1.ConditionTrue, ready.Reason, err.Error()
		} else {
			stalled.Message = "retrying"
		}
	}
	meta.SetStatusCondition(&repo.Status.Conditions, ready)
	meta.SetStatusCondition(&repo.Status.Conditions, stalled)
}
