// The stylesheets the page imports for their side effect: esbuild bundles them into app.css.
declare module '*.css';
