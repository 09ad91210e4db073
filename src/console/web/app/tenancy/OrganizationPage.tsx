// The "My organization" tab: the user's organizations, their namespaces and quota, and who may do what there.
import {
  Alert,
  Button,
  Card,
  CardBody,
  CardTitle,
  EmptyState,
  EmptyStateBody,
  Progress,
  ProgressMeasureLocation,
  Spinner,
} from '@patternfly/react-core';
import { useEffect, useState } from 'react';
import type { Organization } from '../../../../crds/tenancy.ts';
import { apiVersionOf, pathOf, resources } from '../generated/resources.ts';
import { type Api, ApiFailure, type KubeList, type KubeObject } from '../shell/http.ts';
import { InputForm } from '../shell/InputForm.tsx';
import { ResourceTable } from '../shell/ResourceTable.tsx';

const RefreshMs = 3000;
const organizations = resources.Organization;
const rulesReviews = resources.SelfSubjectRulesReview;

interface ResourceRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}

/** The fields of an rbac.authorization.k8s.io/v1 RoleBinding the page shows. */
interface RoleBinding extends KubeObject {
  roleRef: { kind: string; name: string };
  subjects?: { kind: string; name: string }[];
}

const covers = (list: string[] | undefined, value: string) =>
  (list ?? []).includes(value) || (list ?? []).includes('*');

/**
 * The organizations the user may read: tenantkit grants each member `get` on their own Organization by
 * name, so the user's rules (SelfSubjectRulesReview) name them; someone who may list all gets all.
 */
async function myOrganizations(api: Api): Promise<Organization[]> {
  const review = await api.kube<{ status?: { resourceRules?: ResourceRule[] } }>(
    'POST',
    pathOf(rulesReviews),
    {
      apiVersion: apiVersionOf(rulesReviews),
      kind: rulesReviews.kind,
      spec: { namespace: 'default' },
    },
  );
  const rules = (review.status?.resourceRules ?? []).filter(
    (r) => covers(r.apiGroups, organizations.group) && covers(r.resources, organizations.plural),
  );
  if (rules.some((r) => !r.resourceNames?.length && covers(r.verbs, 'list'))) {
    return (await api.kube<KubeList<Organization>>('GET', pathOf(organizations))).items;
  }
  const names = [
    ...new Set(rules.filter((r) => covers(r.verbs, 'get')).flatMap((r) => r.resourceNames ?? [])),
  ];
  const read = await Promise.all(
    names
      .sort()
      .map((name) =>
        api.kube<Organization>('GET', pathOf(organizations, undefined, name)).catch(() => undefined),
      ),
  );
  return read.filter((o): o is Organization => o !== undefined);
}

type Loaded<T> = { state: 'loading' } | { state: 'error'; message: string } | { state: 'done'; value: T };

export function OrganizationPage({ api }: { api: Api }) {
  const [organizations, setOrganizations] = useState<Loaded<Organization[]>>({ state: 'loading' });
  const [tick, setTick] = useState(0);
  const [access, setAccess] = useState<string>();

  // biome-ignore lint/correctness/useExhaustiveDependencies: tick re-runs it on purpose
  useEffect(() => {
    let live = true;
    myOrganizations(api).then(
      (value) => live && setOrganizations({ state: 'done', value }),
      (err: unknown) => live && setOrganizations({ state: 'error', message: (err as Error).message }),
    );
    return () => {
      live = false;
    };
  }, [api, tick]);
  useEffect(() => {
    const timer = setInterval(() => setTick((t) => t + 1), RefreshMs);
    return () => clearInterval(timer);
  }, []);

  if (organizations.state === 'loading') return <Spinner size="lg" aria-label="Loading organizations" />;
  if (organizations.state === 'error') {
    return <Alert variant="danger" isInline title={organizations.message} />;
  }
  if (organizations.value.length === 0) {
    return (
      <EmptyState titleText="You are not a member of any organization" headingLevel="h2">
        <EmptyStateBody>
          An organization owns namespaces and its members administer them. Ask a member of one to add you to
          its Organization's spec.members.
        </EmptyStateBody>
      </EmptyState>
    );
  }
  return (
    <div>
      {organizations.value.map((org) => (
        <OrganizationCard
          key={org.metadata.name}
          api={api}
          organization={org}
          onChanged={() => setTick((t) => t + 1)}
          onAccess={setAccess}
        />
      ))}
      {access && <NamespaceAccess key={access} api={api} namespace={access} />}
    </div>
  );
}

function OrganizationCard({
  api,
  organization,
  onChanged,
  onAccess,
}: {
  api: Api;
  organization: Organization;
  onChanged(): void;
  onAccess(namespace: string): void;
}) {
  const [name, setName] = useState('');
  const [notice, setNotice] = useState<{ variant: 'success' | 'danger'; text: string }>();
  const org = organization.metadata.name ?? '';
  const label = organization.status?.namespaceLabel;

  const create = async () => {
    const wanted = name.trim();
    try {
      await api.kube('POST', pathOf(resources.Namespace), {
        apiVersion: apiVersionOf(resources.Namespace),
        kind: resources.Namespace.kind,
        metadata: { name: wanted, ...(label ? { labels: { [label]: org } } : {}) },
      });
      setNotice({ variant: 'success', text: `Namespace ${wanted} created in ${org}` });
      setName('');
    } catch (err) {
      const refusal = err instanceof ApiFailure ? err.message : String(err);
      setNotice({ variant: 'danger', text: `Namespace ${wanted} was refused: ${refusal}` });
    }
    onChanged();
  };

  return (
    <Card data-organization={org}>
      <CardTitle component="h2">
        {organization.spec?.displayName ? `${organization.spec.displayName} (${org})` : org}
      </CardTitle>
      <CardBody>
        <OrganizationNamespaces organization={organization} onAccess={onAccess} />
        <InputForm
          id={`new-namespace-${org}`}
          label={`New namespace in ${org}`}
          value={name}
          onChange={setName}
          onSubmit={() => void create()}
          button="Create"
          disabled={name.trim() === ''}
          placeholder="e.g. shop-staging"
        />
        {notice && (
          <Alert className="namespace-notice" variant={notice.variant} isInline title={notice.text} />
        )}
      </CardBody>
    </Card>
  );
}

/** An organization's namespaces against its quota, each with links to its pages and who has access. */
function OrganizationNamespaces({
  organization,
  onAccess,
}: {
  organization: Organization;
  onAccess(namespace: string): void;
}) {
  const org = organization.metadata.name ?? '';
  const used = organization.status?.namespaceCount ?? 0;
  const quota = organization.status?.namespaceQuota;
  return (
    <>
      {quota !== undefined ? (
        <Progress
          id={`quota-${org}`}
          title="Namespaces"
          value={quota > 0 ? (100 * used) / quota : 100}
          label={`${used} of ${quota} namespaces`}
          measureLocation={ProgressMeasureLocation.outside}
          {...(used >= quota ? { variant: 'warning' as const } : {})}
        />
      ) : (
        <Spinner size="md" aria-label="Counting namespaces" />
      )}
      {(organization.status?.namespaces ?? []).length === 0 ? (
        <EmptyState titleText="No namespaces yet" headingLevel="h3">
          <EmptyStateBody>Create the first one below.</EmptyStateBody>
        </EmptyState>
      ) : (
        <ResourceTable
          detail="Go to"
          namespaced={false}
          rows={(organization.status?.namespaces ?? []).map((ns) => ({
            name: ns,
            namespace: '',
            detail: (
              <>
                <a href={`#backups?${new URLSearchParams({ namespace: ns })}`}>Backups</a>
                {' · '}
                <a href={`#search?${new URLSearchParams({ q: `namespace:${ns}` })}`}>Search</a>
              </>
            ),
            actions: (
              <Button variant="link" onClick={() => onAccess(ns)}>
                Access
              </Button>
            ),
          }))}
        />
      )}
    </>
  );
}

/** Who may do what in a namespace: the organization's bindings and the scope instances bound there. */
function NamespaceAccess({ api, namespace }: { api: Api; namespace: string }) {
  const [bindings, setBindings] = useState<Loaded<RoleBinding[]>>({ state: 'loading' });
  useEffect(() => {
    api.kube<KubeList<RoleBinding>>('GET', pathOf(resources.RoleBinding, namespace)).then(
      (list) => setBindings({ state: 'done', value: list.items }),
      (err: unknown) =>
        setBindings({
          state: 'error',
          message:
            err instanceof ApiFailure && err.status === 403
              ? `You may not list RoleBindings in ${namespace}`
              : (err as Error).message,
        }),
    );
  }, [api, namespace]);
  const origin = (b: RoleBinding) => {
    const a = b.metadata.annotations ?? {};
    if (a['scopes.tenantkit.io/instance']) return `ScopeInstance ${a['scopes.tenantkit.io/instance']}`;
    if (a['tenancy.tenantkit.io/organization'])
      return `Organization ${a['tenancy.tenantkit.io/organization']}`;
    return 'made in the namespace';
  };
  return (
    <Card id="namespace-access">
      <CardTitle component="h2">Access in {namespace}</CardTitle>
      <CardBody>
        {bindings.state === 'loading' && <Spinner size="md" aria-label="Loading access" />}
        {bindings.state === 'error' && <Alert variant="warning" isInline title={bindings.message} />}
        {bindings.state === 'done' && (
          <ResourceTable
            detail="Grants"
            namespaced={false}
            rows={bindings.value.map((b) => ({
              name: b.metadata.name ?? '',
              namespace: '',
              detail: `${b.roleRef.kind} ${b.roleRef.name} to ${(b.subjects ?? []).map((s) => `${s.kind} ${s.name}`).join(', ') || 'nobody'} (${origin(b)})`,
            }))}
          />
        )}
      </CardBody>
    </Card>
  );
}
