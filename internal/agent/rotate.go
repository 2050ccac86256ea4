package agent

import (
	"context"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MinTokenLifetime is the shortest lifetime the API server grants a requested token.
const MinTokenLifetime = 10 * time.Minute

// rotateLoop replaces the hub token once RotateFraction of its lifetime has passed, with a
// new token for the same ServiceAccount and the same lifetime, and stores it on the member.
func (a *Agent) rotateLoop(ctx context.Context) {
	bo := backoff{min: time.Second, max: time.Minute}
	for {
		a.mu.Lock()
		claims := a.claims
		a.mu.Unlock()
		if !sleep(ctx, time.Until(claims.rotateAt(a.opts.RotateFraction))) {
			return
		}
		for {
			err := a.rotate(ctx, claims)
			if err == nil {
				bo.reset()
				break
			}
			if ctx.Err() != nil {
				return
			}
			wait := bo.next()
			a.hubError(ctx, "rotate token", err, wait)
			if time.Now().After(time.Unix(claims.Expiry, 0)) {
				a.log.Error("hub token expired before it could be rotated; re-join the cluster with `flotilla join`")
			}
			if !sleep(ctx, wait) {
				return
			}
			a.mu.Lock()
			claims = a.claims // credentials may have been re-read meanwhile
			a.mu.Unlock()
		}
	}
}

func (a *Agent) rotate(ctx context.Context, old tokenClaims) error {
	ns, sa, err := old.serviceAccount()
	if err != nil {
		return err
	}
	secs := int64(max(MinTokenLifetime, old.lifetime()).Seconds())
	tr, err := a.hubCS.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	claims, err := parseToken(tr.Status.Token)
	if err != nil {
		return err
	}
	a.token.set(tr.Status.Token)
	a.mu.Lock()
	a.claims = claims
	a.mu.Unlock()
	if err := saveToken(ctx, a.member, tr.Status.Token); err != nil {
		// The new token works in memory; a restart before the next rotation would fall back
		// to the older token, which is still valid until its own expiry.
		a.log.Error("rotated the hub token but could not store it on the member", "error", err)
	}
	a.log.Info("hub token rotated", "expires", tr.Status.ExpirationTimestamp.UTC())
	return nil
}
