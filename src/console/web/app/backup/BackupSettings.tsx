// The Backups tab's cards for a namespace's schedules and storage locations.
import { Button, Card, CardBody, CardTitle } from '@patternfly/react-core';
import type { NonAdminBackupStorageLocation, NonAdminSchedule } from '../../../../crds/backup.ts';
import { pathOf, resources } from '../generated/resources.ts';
import type { Api, MaybeSpec } from '../shell/http.ts';
import { ListView, useList } from '../shell/lists.tsx';
import { ResourceTable } from '../shell/ResourceTable.tsx';

/** A metav1.Condition, as every non-admin kind reports them. */
type Condition = NonNullable<NonNullable<NonAdminSchedule['status']>['conditions']>[number];

/** The condition of `type` in an object's status, if it has one. */
const conditionOf = (o: { status?: { conditions?: Condition[] } | undefined }, type: string) =>
  (o.status?.conditions ?? []).find((c) => c.type === type);

/** A schedule in one line: when, whether paused, its last backup and the next run. */
function scheduleSummary(s: MaybeSpec<NonAdminSchedule>): string {
  const { spec, status } = s;
  const parts = [`${spec?.schedule ?? '?'}${spec?.paused ? ' (paused)' : ''}`, status?.phase ?? 'New'];
  if (status?.lastBackup?.name)
    parts.push(`last: ${status.lastBackup.name} ${status.lastBackup.phase ?? ''}`.trim());
  if (status?.nextRun) parts.push(`next: ${new Date(status.nextRun).toLocaleString()}`);
  const refused = conditionOf(s, 'Accepted');
  if (refused?.status === 'False' && refused.message) parts.push(refused.message);
  return parts.join(' · ');
}

/** A location in one line: the admin's approval, its phase and whether Velero can reach it. */
function locationSummary(l: NonAdminBackupStorageLocation): string {
  const approval = conditionOf(l, 'ClusterAdminApproved');
  const approvalText =
    approval === undefined
      ? 'no approval needed'
      : approval.status === 'True'
        ? 'approved'
        : `${approval.reason ?? 'waiting for approval'}${approval.message ? `: ${approval.message}` : ''}`;
  const velero = l.status?.veleroBackupStorageLocation?.status?.phase;
  return [String(l.status?.phase ?? 'New'), approvalText, ...(velero ? [`Velero: ${velero}`] : [])].join(
    ' · ',
  );
}

export function SchedulesCard({
  api,
  namespace,
  tick,
  onCreate,
}: {
  api: Api;
  namespace: string;
  tick: number;
  onCreate(): void;
}) {
  const schedules = useList<MaybeSpec<NonAdminSchedule>>(
    api,
    pathOf(resources.NonAdminSchedule, namespace),
    tick,
  );
  return (
    <Card id="schedules">
      <CardTitle component="h2">NonAdminSchedules in {namespace}</CardTitle>
      <CardBody>
        <Button id="create-schedule" variant="secondary" onClick={onCreate}>
          Schedule backups
        </Button>
        <ListView
          listed={schedules}
          kind="NonAdminSchedules"
          namespace={namespace}
          render={(items) => (
            <ResourceTable
              detail="Schedule"
              rows={items.map((s) => ({
                name: s.metadata.name ?? '',
                namespace,
                detail: scheduleSummary(s),
              }))}
            />
          )}
        />
      </CardBody>
    </Card>
  );
}

export function LocationsCard({ api, namespace, tick }: { api: Api; namespace: string; tick: number }) {
  const locations = useList<NonAdminBackupStorageLocation>(
    api,
    pathOf(resources.NonAdminBackupStorageLocation, namespace),
    tick,
  );
  return (
    <Card id="locations">
      <CardTitle component="h2">Storage locations in {namespace}</CardTitle>
      <CardBody>
        <ListView
          listed={locations}
          kind="NonAdminBackupStorageLocations"
          namespace={namespace}
          render={(items) => (
            <ResourceTable
              detail="State"
              rows={items.map((l) => ({
                name: l.metadata.name ?? '',
                namespace,
                detail: locationSummary(l),
              }))}
            />
          )}
        />
      </CardBody>
    </Card>
  );
}
