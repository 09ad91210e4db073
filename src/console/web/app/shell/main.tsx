// The console page: sign in with a token, then search, backups and the user's namespaces.
import '@patternfly/react-core/dist/styles/base.css';
import { createRoot } from 'react-dom/client';
import { App } from './App.tsx';

const root = document.getElementById('root');
if (root) createRoot(root).render(<App />);
