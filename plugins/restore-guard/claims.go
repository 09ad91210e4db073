// The claims a tenant's restore creates, known by an identity the tenant cannot forge.
//
// Velero writes a Pod's file-system backup, as root on the node, into the claims the Pod mounts. Only a
// claim this restore created may receive it: one the tenant made (even in the moment between Velero's
// create and the Pod's item, after deleting Velero's) may hold a symlink planted into another Pod's
// volume. Labels and annotations prove nothing (the tenant writes its own claims), so at a claim's item
// that passes (no such claim exists) the guard adds a random nonce to the claim Velero creates and watches
// that name from the resourceVersion at which it was absent: the first claim added with that nonce is
// Velero's (the tenant can learn the nonce only by reading Velero's claim, after it was added). Its UID is
// recorded; at a Pod's item the live claim must have that UID. Anything else fails closed.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

const (
	// How long a claim's watch waits for Velero's create (it follows the item at once) before it stops.
	claimWatchTimeout = 10 * time.Minute
	// How long a Pod's item waits for the watch to see a claim Velero has just created.
	claimSeenWait = 10 * time.Second
)

// restoredClaim is one claim this restore creates: its nonce, and once Velero's create was seen, its UID.
// done is closed when the watch stops (UID recorded, or not: expired, failed, timed out).
type restoredClaim struct {
	nonce string
	uid   types.UID
	done  chan struct{}
}

func newNonce() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// claimItem checks a claim's item: when no such claim exists, Velero will create it; the item gets a
// nonce and a watch starts (before the item goes back to Velero) to learn the UID of the claim Velero
// creates. An existing claim is left as it is by Velero, and is not recorded.
func (g *guard) claimItem(ctx context.Context, restore *velerov1.Restore, item *unstructured.Unstructured) (verb, reason, message string) {
	namespace, name := item.GetNamespace(), item.GetName()
	claims := g.admin.Resource(claimsResource).Namespace(namespace)
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	list, err := claims.List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return "create", "CheckFailed", fmt.Sprintf("could not read claim %s: %v", name, err)
	}
	if len(list.Items) > 0 {
		return "", "", ""
	}
	nonce, err := newNonce()
	if err != nil {
		return "create", "CheckFailed", fmt.Sprintf("could not make a nonce for claim %s: %v", name, err)
	}
	watchCtx, stop := context.WithTimeout(context.Background(), claimWatchTimeout)
	timeout := int64(claimWatchTimeout / time.Second)
	w, err := claims.Watch(watchCtx, metav1.ListOptions{
		FieldSelector: selector, ResourceVersion: list.GetResourceVersion(), TimeoutSeconds: &timeout,
	})
	if err != nil {
		stop()
		return "create", "CheckFailed", fmt.Sprintf("could not watch claim %s: %v", name, err)
	}
	claim := &restoredClaim{nonce: nonce, done: make(chan struct{})}
	key := claimKey(restore, namespace, name)
	g.mu.Lock()
	g.created[key] = claim // the same claim twice in one restore: the latest item is the one Velero writes
	g.mu.Unlock()
	go g.watchClaim(w, stop, claim)

	annotations := item.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[claimNonceAnnotation] = nonce
	item.SetAnnotations(annotations)
	return "", "", ""
}

// watchClaim records the UID of the first claim added with the nonce, then stops; it stops without one
// when the watch ends first (timeout, an expired resourceVersion, an error).
func (g *guard) watchClaim(w watch.Interface, stop context.CancelFunc, claim *restoredClaim) {
	defer close(claim.done)
	defer stop()
	defer w.Stop()
	for event := range w.ResultChan() {
		if event.Type != watch.Added {
			if event.Type == watch.Error {
				return
			}
			continue
		}
		obj, ok := event.Object.(*unstructured.Unstructured)
		if !ok || obj.GetAnnotations()[claimNonceAnnotation] != claim.nonce {
			continue
		}
		g.mu.Lock()
		claim.uid = obj.GetUID()
		g.mu.Unlock()
		return
	}
}

// createdClaim tells whether the live claim namespace/name is the one this restore created: the UID the
// watch recorded. It waits a little for a watch that has not yet seen Velero's create.
func (g *guard) createdClaim(ctx context.Context, restore *velerov1.Restore, namespace, name string) (bool, string, error) {
	g.mu.Lock()
	claim := g.created[claimKey(restore, namespace, name)]
	g.mu.Unlock()
	if claim == nil {
		return false, "this restore did not create it", nil
	}
	wait, cancel := context.WithTimeout(ctx, claimSeenWait)
	defer cancel()
	select {
	case <-claim.done:
	case <-wait.Done():
	}
	g.mu.Lock()
	uid := claim.uid
	g.mu.Unlock()
	if uid == "" {
		return false, "the guard did not see this restore create it", nil
	}
	live, err := g.admin.Resource(claimsResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, "it was deleted after this restore created it", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("could not read claim %s: %w", name, err)
	}
	if live.GetUID() != uid {
		return false, "it was replaced after this restore created it", nil
	}
	return true, "", nil
}
