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
import { useState } from 'react';
import { Api, whoAmI } from './api.ts';

/** Sign-in with a bearer token (what kubectl uses); the token stays in this tab's memory only. */
export function SignIn({ onSignedIn }: { onSignedIn(api: Api, username: string): void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
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
