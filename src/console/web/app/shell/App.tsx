// The page's frame: masthead, sign-out and one tab per capability, routed by the address's hash.
import {
  Button,
  Masthead,
  MastheadBrand,
  MastheadContent,
  MastheadMain,
  Page,
  PageSection,
  Tab,
  Tabs,
  TabTitleText,
  Title,
} from '@patternfly/react-core';
import { useEffect, useState } from 'react';
import { BackupsPage } from '../backup/BackupsPage.tsx';
import { SearchPage } from '../search/SearchPage.tsx';
import { OrganizationPage } from '../tenancy/OrganizationPage.tsx';
import type { Api } from './http.ts';
import { SignIn } from './SignIn.tsx';

type TabKey = 'search' | 'backups' | 'organization';
const tabs: readonly TabKey[] = ['search', 'backups', 'organization'];

/** The tab and its state from the address (`#search?q=...`), so a search is a link one can share. */
function fromHash(): { tab: TabKey; params: URLSearchParams } {
  const [name, query] = window.location.hash.replace(/^#/, '').split('?');
  const tab = tabs.find((t) => t === name) ?? 'search';
  return { tab, params: new URLSearchParams(query ?? '') };
}

export function App() {
  const [session, setSession] = useState<{ api: Api; username: string } | undefined>();
  const [route, setRoute] = useState(fromHash);
  useEffect(() => {
    const onHash = () => setRoute(fromHash());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  if (!session) return <SignIn onSignedIn={(api, username) => setSession({ api, username })} />;

  const masthead = (
    <Masthead>
      <MastheadMain>
        <MastheadBrand>
          <Title headingLevel="h1" size="lg">
            tenantkit
          </Title>
        </MastheadBrand>
      </MastheadMain>
      <MastheadContent>
        <span id="signed-in-user">{session.username}</span>{' '}
        {session.api.viaProxy ? (
          // The proxy holds the session: signing out is its business (oauth2-proxy's path).
          <Button variant="secondary" component="a" href="/oauth2/sign_out">
            Sign out
          </Button>
        ) : (
          <Button
            variant="secondary"
            onClick={() => {
              session.api.close();
              setSession(undefined);
            }}
          >
            Sign out
          </Button>
        )}
      </MastheadContent>
    </Masthead>
  );
  return (
    <Page masthead={masthead}>
      <PageSection>
        <Tabs
          activeKey={route.tab}
          onSelect={(_e, key) => {
            window.location.hash = String(key);
          }}
          aria-label="Console sections"
        >
          <Tab eventKey="search" title={<TabTitleText>Search</TabTitleText>}>
            <SearchPage
              api={session.api}
              username={session.username}
              initial={route.params.get('q') ?? ''}
              savedIn={route.params.get('saved') ?? ''}
            />
          </Tab>
          <Tab eventKey="backups" title={<TabTitleText>Backups</TabTitleText>}>
            <BackupsPage api={session.api} initial={route.params.get('namespace') ?? ''} />
          </Tab>
          <Tab eventKey="organization" title={<TabTitleText>My organization</TabTitleText>}>
            {route.tab === 'organization' && <OrganizationPage api={session.api} />}
          </Tab>
        </Tabs>
      </PageSection>
    </Page>
  );
}
