// Command tenantkit-restore-guard is a Velero plugin (a RestoreItemAction) that makes every item of a
// tenant's restore pass the API server's own rules for the person who asked for it, at the moment
// Velero is about to write it.
//
// Velero restores with its own identity, which may write anything. For a Restore that tenantkit made
// for a NonAdminRestore, this action repeats the write Velero is about to make as a server-side dry run
// while impersonating the NonAdminRestore's requester (recorded by tenantkit's admission webhook when the
// NonAdminRestore was created, copied by the controller onto the Restore in Velero's namespace, where
// tenants cannot write). The dry run goes through authentication of the impersonated user, RBAC
// (including the escalation and bind checks for Roles and RoleBindings) and every admission plugin and
// webhook, exactly as the tenant's own `kubectl create --dry-run=server` would. An item that fails is
// skipped, and the refusal is recorded in a ConfigMap in Velero's namespace that the NonAdminRestore
// controller reports in the NonAdminRestore's status.
//
// The check runs per item inside Velero, so it judges exactly the bytes Velero restores: a backup whose
// contents change between tenantkit's look and Velero's write (a tenant's own bucket) gains nothing.
// Restores tenantkit did not make (an admin's) pass untouched.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/sirupsen/logrus"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

// The names this plugin shares with tenantkit's backup controllers (pluginName, requesterAnnotation, the
// NonAdminRestore's labels and annotations on a Velero Restore, the refusals ConfigMap's label and key) are
// in names_generated.go, which `npm run generate` writes from src/backup/model.ts.
const (
	// Beyond this many recorded refusals only the count grows (a ConfigMap holds at most 1 MiB).
	maxRecorded = 500
	// Velero's object-level switch for restoring an item's status.
	restoreStatusAnnotation = "velero.io/restore-status"
	// Writes of the refusals ConfigMap are bounded per restore: a guard process writes at its first refusal
	// (so that a process that dies leaves a mark), then at most once every flushEvery while refusals come
	// in, at most maxWrites times in all, and once more when Velero stops it at the end of the restore
	// (within exitFlushWithin: Velero waits 2 s for a plugin to exit before it kills it). Refusals in
	// between are counted in memory; the count stays exact.
	flushEvery      = 5 * time.Second
	maxWrites       = 10
	exitFlushWithin = 1500 * time.Millisecond
)

// requester is the user a NonAdminRestore was created by (authentication.k8s.io UserInfo).
type requester struct {
	Username string              `json:"username"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// refusal is one item not restored, as the NonAdminRestore's status shows it.
type refusal struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Verb       string `json:"verb"`
	Reason     string `json:"reason"`
	Message    string `json:"message"`
}

type refusals struct {
	Count int       `json:"count"`
	Items []refusal `json:"items"`
	// Open counts the guard processes that recorded refusals and have not yet written their last ones: a
	// finished restore whose ConfigMap still says open > 0 lost a process mid-way, and its count may be low
	// (the restore log names every refusal).
	Open int `json:"open,omitempty"`
}

// guards are the actions this process made, flushed when Velero stops it.
var (
	guardsMu sync.Mutex
	guards   []*guard
)

func main() {
	framework.NewServer().
		RegisterRestoreItemAction(pluginName, func(logger logrus.FieldLogger) (any, error) {
			g, err := newGuard(logger)
			if err == nil {
				guardsMu.Lock()
				guards = append(guards, g)
				guardsMu.Unlock()
			}
			return g, err
		}).
		Serve()
	// Velero stopped the plugin (the restore's items are done): write what is still in memory.
	ctx, cancel := context.WithTimeout(context.Background(), exitFlushWithin)
	defer cancel()
	guardsMu.Lock()
	defer guardsMu.Unlock()
	for _, g := range guards {
		g.flushAll(ctx)
	}
}

// guard is the action; Velero starts one plugin process per restore, so its caches live for one restore.
type guard struct {
	log     logrus.FieldLogger
	config  *rest.Config
	admin   dynamic.Interface
	core    kubernetes.Interface
	mapper  meta.RESTMapper
	mu      sync.Mutex
	clients map[string]dynamic.Interface
	// created holds the claims (restore UID/namespace/name) this restore creates: absent when their item
	// passed the check, with the UID of the claim Velero made (claims.go). Velero writes a Pod's file-system
	// backup into the claims its volumes mount, as root on the node, following any symlink already there;
	// only claims in here, with that UID still, may receive it.
	created map[string]*restoredClaim
	// pending holds, per restore UID, the refusals not yet written to the restore's ConfigMap.
	flushMu sync.Mutex
	pending map[types.UID]*pendingRefusals
}

// pendingRefusals is what one guard process has refused for one restore and not yet written.
type pendingRefusals struct {
	restore   *velerov1.Restore
	count     int
	items     []refusal
	opened    bool // this process counted itself in the ConfigMap's open
	writes    int
	lastWrite time.Time
}

func newGuard(logger logrus.FieldLogger) (*guard, error) {
	// Velero's own identity: its kubeconfig (KUBECONFIG, as `velero server --kubeconfig` has it) or the
	// in-cluster service account. Velero's client limits (20 requests/s) would double a restore's time.
	config, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return nil, fmt.Errorf("tenantkit restore guard: no Kubernetes client configuration: %w", err)
	}
	config.QPS, config.Burst = 200, 400
	config.UserAgent = "tenantkit-restore-guard"
	admin, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	core, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	return &guard{
		log: logger, config: config, admin: admin, core: core, mapper: mapper,
		clients: map[string]dynamic.Interface{}, created: map[string]*restoredClaim{},
		pending: map[types.UID]*pendingRefusals{},
	}, nil
}

// AppliesTo selects every item: the rule holds for every kind.
func (g *guard) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{}, nil
}

func (g *guard) Execute(input *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	restore := input.Restore
	pass := velero.NewRestoreItemActionExecuteOutput(input.Item)
	if restore == nil || restore.Labels[managedByLabel] != managedByValue {
		return pass, nil // not a tenant's restore
	}
	item := &unstructured.Unstructured{Object: input.Item.UnstructuredContent()}
	unbindClaim(item)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	verb, reason, message := g.check(ctx, restore, item, input.ItemFromBackup)
	if reason == "" {
		verb, reason, message = g.checkVolumes(ctx, restore, item)
	}
	if reason == "" {
		return velero.NewRestoreItemActionExecuteOutput(item), nil
	}
	r := refusal{
		APIVersion: item.GetAPIVersion(), Kind: item.GetKind(), Name: item.GetName(),
		Verb: verb, Reason: reason, Message: message,
	}
	g.log.WithFields(logrus.Fields{"kind": r.Kind, "name": r.Name, "verb": verb, "reason": reason}).
		Warnf("tenantkit: not restored: %s", message)
	if err := g.note(ctx, restore, r); err != nil {
		// The item is skipped either way; an unrecorded refusal must still be visible: fail the item.
		return nil, fmt.Errorf("tenantkit refused %s %s (%s) and could not record it: %w", r.Kind, r.Name, message, err)
	}
	return &velero.RestoreItemActionExecuteOutput{UpdatedItem: input.Item, SkipRestore: true}, nil
}

// Annotations the PersistentVolume controller and the scheduler put on a bound claim.
var claimBindingAnnotations = []string{
	"pv.kubernetes.io/bind-completed",
	"pv.kubernetes.io/bound-by-controller",
	"volume.kubernetes.io/selected-node",
	"volume.kubernetes.io/storage-provisioner",
	"volume.beta.kubernetes.io/storage-provisioner",
}

// unbindClaim turns a PersistentVolumeClaim of a tenant's restore into a new claim: no volumeName, no
// binding annotations, so its StorageClass provisions a fresh volume (into which a file-system backup is
// restored). A tenant's restore never restores PersistentVolumes (cluster-scoped), so the claim's old
// volume is gone or not the tenant's to take: a volumeName would leave the claim Pending for ever, or bind
// it to whatever Available volume has that name, another tenant's released data included.
func unbindClaim(item *unstructured.Unstructured) {
	if item.GroupVersionKind().GroupKind() != (schema.GroupKind{Kind: "PersistentVolumeClaim"}) {
		return
	}
	unstructured.RemoveNestedField(item.Object, "spec", "volumeName")
	annotations := item.GetAnnotations()
	for _, key := range claimBindingAnnotations {
		delete(annotations, key)
	}
	item.SetAnnotations(annotations)
}

// check returns the refused verb, a reason and a message, or an empty reason when the write may go on.
func (g *guard) check(ctx context.Context, restore *velerov1.Restore, item *unstructured.Unstructured, fromBackup interface {
	UnstructuredContent() map[string]any
}) (verb, reason, message string) {
	who, err := requesterOf(restore)
	if err != nil {
		return "create", "NoRequester", err.Error()
	}
	target := restore.Annotations[narNsAnnotation]
	if target == "" || item.GetNamespace() == "" || item.GetNamespace() != target {
		return "create", "OutsideNamespace", fmt.Sprintf(
			"only objects of namespace %q are restored for this NonAdminRestore (this one is in %q)",
			target, item.GetNamespace())
	}
	gvk := item.GroupVersionKind()
	mapping, err := g.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return "create", "UnknownKind", fmt.Sprintf("the API server does not serve %s: %v", gvk, err)
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return "create", "ClusterScoped", "cluster-scoped objects are never restored for a tenant"
	}
	as, err := g.clientFor(who)
	if err != nil {
		return "create", "CheckFailed", err.Error()
	}
	resource := as.Resource(mapping.Resource).Namespace(target)
	// What Velero will send: the item with its restore labels, in the target namespace.
	desired := item.DeepCopy()
	desired.SetNamespace(target)
	addRestoreLabels(desired, restore)
	dryRun := []string{metav1.DryRunAll}

	// Velero patches an existing object under existingResourcePolicy: update (its restore labels at
	// least), and merges a ServiceAccount that differs whatever the policy: the same merge patch, from the
	// live object as Velero sees it. Otherwise it never writes an existing object, and the live one need
	// not be read.
	update := restore.Spec.ExistingResourcePolicy == velerov1.PolicyTypeUpdate
	serviceAccount := mapping.Resource.GroupResource() == corev1.SchemeGroupVersion.WithResource("serviceaccounts").GroupResource()
	if update || serviceAccount {
		live, err := g.admin.Resource(mapping.Resource).Namespace(target).Get(ctx, item.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return "patch", "CheckFailed", fmt.Sprintf("could not read the live object: %v", err)
		default:
			patch, err := mergePatch(live, desired, !update)
			if err != nil {
				return "patch", "CheckFailed", err.Error()
			}
			if string(patch) != "{}" {
				if _, err := resource.Patch(ctx, item.GetName(), types.MergePatchType, patch, metav1.PatchOptions{DryRun: dryRun}); err != nil && !apierrors.IsNotFound(err) {
					return "patch", refusalReason(err), err.Error()
				}
			}
		}
	}
	// Create, always, even for an object that exists: it may be gone by the time Velero writes. RBAC and
	// admission run before the storage layer reports that the name is taken, so AlreadyExists means
	// "allowed".
	if _, err := resource.Create(ctx, desired, metav1.CreateOptions{DryRun: dryRun}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "create", refusalReason(err), err.Error()
	}
	if statusRestored(restore, mapping.Resource.GroupResource(), item, fromBackup.UnstructuredContent()) {
		allowed, why, err := g.mayUpdateStatus(ctx, who, mapping.Resource, target, item.GetName())
		if err != nil {
			return "update", "CheckFailed", err.Error()
		}
		if !allowed {
			return "update", "Forbidden", fmt.Sprintf("%s may not update %s/status in namespace %s%s",
				who.Username, mapping.Resource.Resource, target, why)
		}
	}
	return "", "", ""
}

var (
	claimsResource           = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	podVolumeBackupsResource = velerov1.SchemeGroupVersion.WithResource("podvolumebackups")
	podGroupKind             = schema.GroupKind{Kind: "Pod"}
	claimGroupKind           = schema.GroupKind{Kind: "PersistentVolumeClaim"}
)

func claimKey(restore *velerov1.Restore, namespace, name string) string {
	return string(restore.UID) + "/" + namespace + "/" + name
}

// checkVolumes keeps Velero's file-system restore out of claims this restore did not create. At a claim's
// item: whether it exists now (Velero then leaves it as it is), and if not, a nonce to know Velero's claim
// by its UID (claims.go). At a Pod's item: every claim that a volume Velero restores file by file mounts
// must be the very claim this restore created (that UID: not one the tenant made in between). Otherwise
// Velero would write the backup's files, as root with kubelet's whole pods directory mounted, into a
// volume the tenant prepared, following a symlink planted there into another Pod's volume. A plugin process restarted mid-restore forgets: fail closed.
func (g *guard) checkVolumes(ctx context.Context, restore *velerov1.Restore, item *unstructured.Unstructured) (verb, reason, message string) {
	switch item.GroupVersionKind().GroupKind() {
	case claimGroupKind:
		return g.claimItem(ctx, restore, item)
	case podGroupKind:
	default:
		return "", "", ""
	}
	volumes, err := g.fileSystemVolumes(ctx, restore, item.GetNamespace(), item.GetName())
	if err != nil {
		return "create", "CheckFailed", err.Error()
	}
	if len(volumes) == 0 {
		return "", "", ""
	}
	specVolumes, _, _ := unstructured.NestedSlice(item.Object, "spec", "volumes")
	for _, v := range specVolumes {
		volume, _ := v.(map[string]any)
		name, _ := volume["name"].(string)
		claim, _, _ := unstructured.NestedString(volume, "persistentVolumeClaim", "claimName")
		if !volumes[name] || claim == "" {
			continue // not restored file by file, or a volume the new Pod gets empty (emptyDir)
		}
		created, why, err := g.createdClaim(ctx, restore, item.GetNamespace(), claim)
		if err != nil {
			return "create", "CheckFailed", err.Error()
		}
		if !created {
			return "create", "ExistingClaim", fmt.Sprintf(
				"Pod %s would get its file-system backup of volume %s written into claim %s, which is not one this restore created (%s; "+
					"Velero writes into an existing volume as root): delete claim %s, or leave it out of the restore, and restore again",
				item.GetName(), name, claim, why, claim)
		}
	}
	return "", "", ""
}

// fileSystemVolumes names the volumes of Pod namespace/name that the restore's backup holds file by file
// (its PodVolumeBackups in Velero's namespace), which Velero restores into the new Pod.
func (g *guard) fileSystemVolumes(ctx context.Context, restore *velerov1.Restore, namespace, name string) (map[string]bool, error) {
	list, err := g.admin.Resource(podVolumeBackupsResource).Namespace(restore.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: velerov1.BackupNameLabel + "=" + shortLabel(restore.Spec.BackupName),
	})
	if err != nil {
		return nil, fmt.Errorf("could not list the backup's PodVolumeBackups: %w", err)
	}
	volumes := map[string]bool{}
	for _, pvb := range list.Items {
		podNs, _, _ := unstructured.NestedString(pvb.Object, "spec", "pod", "namespace")
		podName, _, _ := unstructured.NestedString(pvb.Object, "spec", "pod", "name")
		volume, _, _ := unstructured.NestedString(pvb.Object, "spec", "volume")
		if podNs == namespace && podName == name && volume != "" {
			volumes[volume] = true
		}
	}
	return volumes, nil
}

func requesterOf(restore *velerov1.Restore) (requester, error) {
	var who requester
	raw, ok := restore.Annotations[requesterAnnotation]
	if !ok {
		return who, errors.New("the Restore does not name who asked for it; no object is restored on nobody's rights")
	}
	if err := json.Unmarshal([]byte(raw), &who); err != nil || who.Username == "" {
		return who, fmt.Errorf("the Restore's requester annotation is unreadable: %v", err)
	}
	return who, nil
}

// clientFor is a dynamic client that impersonates the requester with every attribute they had.
func (g *guard) clientFor(who requester) (dynamic.Interface, error) {
	key, _ := json.Marshal(who)
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.clients[string(key)]; ok {
		return c, nil
	}
	config := rest.CopyConfig(g.config)
	config.Impersonate = rest.ImpersonationConfig{
		UserName: who.Username, UID: who.UID, Groups: who.Groups, Extra: who.Extra,
	}
	c, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	g.clients[string(key)] = c
	return c, nil
}

func (g *guard) mayUpdateStatus(ctx context.Context, who requester, gvr schema.GroupVersionResource, ns, name string) (bool, string, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range who.Extra {
		extra[k] = v
	}
	review, err := g.core.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: who.Username, UID: who.UID, Groups: who.Groups, Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: "update", Group: gvr.Group, Version: gvr.Version,
				Resource: gvr.Resource, Subresource: "status", Name: name,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("could not check the right to restore status: %w", err)
	}
	why := ""
	if review.Status.Reason != "" {
		why = ": " + review.Status.Reason
	}
	return review.Status.Allowed, why, nil
}

// statusRestored says whether Velero will write this item's status (the Restore's restoreStatus
// filter, or the object's own velero.io/restore-status annotation, which comes from the backup).
func statusRestored(restore *velerov1.Restore, gr schema.GroupResource, item *unstructured.Unstructured, fromBackup map[string]any) bool {
	if status, ok := fromBackup["status"].(map[string]any); !ok || len(status) == 0 {
		return false
	}
	if _, ok := item.GetAnnotations()[restoreStatusAnnotation]; ok {
		return true
	}
	rs := restore.Spec.RestoreStatus
	if rs == nil {
		return false
	}
	matches := func(list []string) bool {
		return slices.ContainsFunc(list, func(r string) bool { return r == "*" || r == gr.String() || r == gr.Resource })
	}
	return matches(rs.IncludedResources) && !matches(rs.ExcludedResources)
}

func addRestoreLabels(obj *unstructured.Unstructured, restore *velerov1.Restore) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[velerov1.BackupNameLabel] = shortLabel(restore.Spec.BackupName)
	labels[velerov1.RestoreNameLabel] = shortLabel(restore.Name)
	obj.SetLabels(labels)
}

// shortLabel is Velero's label.GetValidName for the names tenantkit makes (at most 63 characters).
func shortLabel(s string) string {
	if len(s) <= 63 {
		return s
	}
	return s[:57] // not reached for tenantkit's NACUUID names; the dry run then differs only in a label
}

// mergePatch is the JSON merge patch Velero sends to update an existing object: from the live object,
// without server-set metadata and status (and, when withLabels, carrying the restore labels already, as
// Velero compares), to the restored one.
func mergePatch(live, desired *unstructured.Unstructured, withLabels bool) ([]byte, error) {
	from := live.DeepCopy()
	if withLabels {
		labels := from.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		for _, k := range []string{velerov1.BackupNameLabel, velerov1.RestoreNameLabel} {
			labels[k] = desired.GetLabels()[k]
		}
		from.SetLabels(labels)
	}
	for _, k := range []string{"generateName", "selfLink", "uid", "resourceVersion", "generation",
		"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences", "managedFields"} {
		unstructured.RemoveNestedField(from.Object, "metadata", k)
	}
	unstructured.RemoveNestedField(from.Object, "status")
	fromBytes, err := json.Marshal(from.Object)
	if err != nil {
		return nil, err
	}
	toBytes, err := json.Marshal(desired.Object)
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatch.CreateMergePatch(fromBytes, toBytes)
	if err != nil {
		return nil, fmt.Errorf("could not compute the update Velero would make: %w", err)
	}
	return patch, nil
}

// refusalReason names why the API server refused the dry run; anything but a clear answer fails closed.
func refusalReason(err error) string {
	switch {
	case apierrors.IsForbidden(err):
		return "Forbidden"
	case apierrors.IsInvalid(err):
		return "Invalid"
	case apierrors.IsBadRequest(err):
		return "BadRequest"
	default:
		if status, ok := err.(apierrors.APIStatus); ok && status.Status().Reason != "" {
			return string(status.Status().Reason)
		}
		return "CheckFailed"
	}
}

// note counts a refusal and writes the restore's refusals when the bound allows (see flushEvery).
func (g *guard) note(ctx context.Context, restore *velerov1.Restore, r refusal) error {
	g.flushMu.Lock()
	defer g.flushMu.Unlock()
	p := g.pending[restore.UID]
	if p == nil {
		p = &pendingRefusals{restore: restore}
		g.pending[restore.UID] = p
	}
	p.count++
	if len(p.items) < maxRecorded {
		r.Message = truncate(r.Message, 1024)
		p.items = append(p.items, r)
	}
	if p.opened && (p.writes >= maxWrites || time.Since(p.lastWrite) < flushEvery) {
		return nil
	}
	return g.flush(ctx, p, false)
}

// flushAll writes every restore's pending refusals for the last time (the process ends).
func (g *guard) flushAll(ctx context.Context) {
	g.flushMu.Lock()
	defer g.flushMu.Unlock()
	for _, p := range g.pending {
		if err := g.flush(ctx, p, true); err != nil {
			g.log.WithError(err).Errorf("tenantkit: could not record the last %d refusals of restore %s (the restore log names them)",
				p.count, p.restore.Name)
		}
	}
}

// flush adds p's refusals to the restore's ConfigMap in Velero's namespace (owned by the Restore), a
// merge with what other processes of the same restore wrote; closing takes this process out of open.
func (g *guard) flush(ctx context.Context, p *pendingRefusals, closing bool) error {
	if !p.opened && p.count == 0 {
		return nil
	}
	if p.opened && p.count == 0 && !closing {
		return nil
	}
	restore := p.restore
	cms := g.core.CoreV1().ConfigMaps(restore.Namespace)
	name := restore.Name + "-refused"
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: restore.Namespace,
				Labels: map[string]string{
					managedByLabel: managedByValue, "openshift.io/oadp": "True",
					narUUIDLabel: restore.Labels[narUUIDLabel], refusalsLabel: restore.Name,
				},
				Annotations: map[string]string{
					narNameAnnotation: restore.Annotations[narNameAnnotation],
					narNsAnnotation:   restore.Annotations[narNsAnnotation],
				},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: velerov1.SchemeGroupVersion.String(), Kind: "Restore",
					Name: restore.Name, UID: restore.UID,
				}},
			}}
		} else if err != nil {
			return err
		}
		var list refusals
		if raw := cm.Data[refusalsKey]; raw != "" {
			if err := json.Unmarshal([]byte(raw), &list); err != nil {
				return fmt.Errorf("refusals ConfigMap %s is unreadable: %w", name, err)
			}
		}
		list.Count += p.count
		if room := maxRecorded - len(list.Items); room > 0 {
			list.Items = append(list.Items, p.items[:min(room, len(p.items))]...)
		}
		if !p.opened {
			list.Open++
		}
		if closing {
			list.Open = max(list.Open-1, 0)
		}
		raw, _ := json.Marshal(list)
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[refusalsKey] = string(raw)
		if cm.ResourceVersion == "" {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, name, err)
			}
			return err
		}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	p.count, p.items = 0, nil
	p.opened = !closing
	p.writes++
	p.lastWrite = time.Now()
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
