// A table of objects: name, namespace, one detail column and actions.
import '@patternfly/react-styles/css/components/Table/table.css';
import '@patternfly/react-styles/css/components/Table/table-grid.css';
import { Button } from '@patternfly/react-core';
import type { ReactNode } from 'react';

export interface Row {
  name: string;
  /** Makes the name a link that opens the object. */
  onOpen?: () => void;
  namespace: string;
  detail: ReactNode;
  actions?: ReactNode;
}

/**
 * A compact PatternFly table of objects: name, namespace, one detail column, optional actions. Below the
 * medium breakpoint (a phone) each row becomes a stack of labelled cells.
 */
export function ResourceTable({
  rows,
  detail,
  namespaced = true,
}: {
  rows: Row[];
  detail: string;
  /** Whether to show the namespace column (namespaces themselves and bindings listed in one do not). */
  namespaced?: boolean;
}) {
  return (
    <table className="pf-v6-c-table pf-m-compact pf-m-grid-md" aria-label={`${detail} table`}>
      <thead className="pf-v6-c-table__thead">
        <tr className="pf-v6-c-table__tr">
          <th className="pf-v6-c-table__th" scope="col">
            Name
          </th>
          {namespaced && (
            <th className="pf-v6-c-table__th" scope="col">
              Namespace
            </th>
          )}
          <th className="pf-v6-c-table__th" scope="col">
            {detail}
          </th>
          <th className="pf-v6-c-table__th" scope="col">
            <span className="pf-v6-screen-reader">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody className="pf-v6-c-table__tbody">
        {rows.map((r) => (
          <tr className="pf-v6-c-table__tr" key={`${r.namespace}/${r.name}`} data-name={r.name}>
            <td className="pf-v6-c-table__td" data-label="Name">
              {r.onOpen ? (
                <Button variant="link" isInline onClick={r.onOpen}>
                  {r.name}
                </Button>
              ) : (
                r.name
              )}
            </td>
            {namespaced && (
              <td className="pf-v6-c-table__td" data-label="Namespace">
                {r.namespace}
              </td>
            )}
            <td className="pf-v6-c-table__td" data-label={detail}>
              {r.detail}
            </td>
            <td className="pf-v6-c-table__td">{r.actions}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
