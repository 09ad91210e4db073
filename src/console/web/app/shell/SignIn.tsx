// The sign-in card: a bearer token, or none behind an authenticating proxy.
import {
  ActionGroup,
  Alert,
  Button,
  Card,
  CardBody,
  CardTitle,
  Form,
  FormGroup,
  FormHelperText,
  HelperText,
  HelperTextItem,
  PageSection,
  TextInput,
} from '@patternfly/react-core';
import { useEffect, useState } from 'react';
import { Api, proxied, whoAmI } from './http.ts';

/**
 * Sign-in with a bearer token (what kubectl uses); the token stays in this tab's memory only. Behind an
 * authenticating proxy that adds the user's token to every request (oauth2-proxy, docs/console.md), the
 * page is signed in already: it asks who it is without a token of its own first.
 */
export function SignIn({ onSignedIn }: { onSignedIn(api: Api, username: string): void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(true);
  // biome-ignore lint/correctness/useExhaustiveDependencies: once, on arrival
  useEffect(() => {
    const viaProxy = new Api('');
    proxied()
      .then((yes) => (yes ? whoAmI(viaProxy) : undefined))
      .then(
        (me) => (me ? onSignedIn(viaProxy, me.username) : setBusy(false)),
        () => setBusy(false),
      );
  }, []);
  const submit = async (event: React.FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const api = new Api(token.trim());
      const me = await whoAmI(api);
      onSignedIn(api, me.username);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <PageSection>
      <Card style={{ maxWidth: '40rem', margin: '4rem auto' }}>
        <CardTitle component="h1">Sign in to tenantkit</CardTitle>
        <CardBody>
          {error && <Alert variant="danger" isInline title={`Sign-in failed: ${error}`} />}
          <Form onSubmit={submit}>
            <FormGroup label="Token" isRequired fieldId="token">
              <TextInput
                id="token"
                type="password"
                value={token}
                onChange={(_e, value) => setToken(value)}
                autoComplete="off"
                isRequired
              />
              <FormHelperText>
                <HelperText>
                  <HelperTextItem>
                    Your Kubernetes bearer token, e.g. from <code>kubectl create token</code>. It is kept in
                    this tab only and forgotten when you sign out.
                  </HelperTextItem>
                </HelperText>
              </FormHelperText>
            </FormGroup>
            <ActionGroup>
              <Button type="submit" isLoading={busy} isDisabled={busy || token.trim() === ''}>
                Sign in
              </Button>
            </ActionGroup>
          </Form>
        </CardBody>
      </Card>
    </PageSection>
  );
}
