// Minting an agent (project admins; the server wants a fresh two-factor check, which the API client asks for)
// and what the admin needs right after: the token and hmac_secret, shown once, and the z4j agent's
// configuration ready to paste, for the WebSocket default and the long-poll fallback.
import { useState } from 'preact/hooks';
import { api } from '../../api/client.ts';
import type { MintedAgent, Project } from '../../api/types.ts';
import { Section } from '../../ui/bits.tsx';
import { CopyButton, SecretOnce } from '../../ui/copy.tsx';
import { TextField } from '../../ui/form.tsx';
import { FormDialog } from '../../ui/form-dialog.tsx';
import { AgentState } from '../../ui/status.tsx';
import { projectPath } from './requests.ts';

type Transport = 'ws' | 'longpoll';

/** The agent's environment (z4j reads Z4J_*; agent-protocol section 9.2). Z4J_PROJECT_ID is the slug. */
export function agentEnvironment(project: Project, minted: MintedAgent, transport: Transport, origin = location.origin): string {
  const lines = [
    `Z4J_BRAIN_URL=${origin}`,
    `Z4J_TOKEN=${minted.token}`,
    `Z4J_PROJECT_ID=${project.slug}`,
    `Z4J_HMAC_SECRET=${minted.hmac_secret}`,
  ];
  if (transport === 'longpoll') lines.push('Z4J_TRANSPORT=longpoll', `Z4J_AGENT_ID=${minted.agent.id}`);
  return `${lines.join('\n')}\n`;
}

/** The button that opens the mint form; `onMinted` gets the answer (its secrets exist only there). */
export function ConnectAgentButton(props: { project: Project; onMinted: (m: MintedAgent) => void; primary?: boolean }) {
  return (
    <FormDialog
      button="Connect an agent"
      buttonClass={props.primary ? 'primary' : 'secondary'}
      title="Connect an agent"
      submit="Create agent"
      onSubmit={async (v) => {
        props.onMinted(await api.post<MintedAgent>(`${projectPath(props.project.slug)}/agents`, { name: v.name?.trim() }));
      }}
    >
      <p>
        An agent is one set of credentials for the z4j agent inside your workers. Use one per deployment (all its workers share
        it), so each can be revoked on its own.
      </p>
      <TextField label="Agent name" name="name" required maxLength={200} autoFocus hint="For example “payments-workers”." />
    </FormDialog>
  );
}

/** The freshly minted agent: secrets once, the configuration, and whether it has connected yet. */
export function MintedAgentPanel(props: { project: Project; minted: MintedAgent; state: string; onDone: () => void }) {
  const [transport, setTransport] = useState<Transport>('ws');
  const { minted, project } = props;
  const env = agentEnvironment(project, minted, transport);
  const plainHttp = location.protocol === 'http:';
  return (
    <Section title={`Agent ${minted.agent.name} is ready to connect`}>
      <SecretOnce label="Token (Z4J_TOKEN)" value={minted.token} testId="agent-token" />
      <SecretOnce
        label="HMAC secret (Z4J_HMAC_SECRET)"
        value={minted.hmac_secret}
        testId="agent-hmac-secret"
        note="the project's frame signing key; copy it now: it is not shown again."
      />
      <h3>Configuration for the z4j agent</h3>
      <fieldset class="field segmented">
        <legend>Transport</legend>
        <label class="inline">
          <input type="radio" name="transport" checked={transport === 'ws'} onChange={() => setTransport('ws')} /> WebSocket
          (default)
        </label>
        <label class="inline">
          <input type="radio" name="transport" checked={transport === 'longpoll'} onChange={() => setTransport('longpoll')} />{' '}
          Long-poll (where WebSockets are blocked)
        </label>
      </fieldset>
      <pre class="code-block" data-testid="agent-config" tabIndex={0} aria-label="Agent configuration">
        {env}
      </pre>
      <div class="actions">
        <CopyButton text={env} label="Copy configuration" />
      </div>
      <ol class="steps">
        <li>
          Install the agent beside your app: <code>pip install z4j-celery</code>.
        </li>
        <li>
          Put the lines above into the workers' environment (an env file, systemd <code>EnvironmentFile</code>,{' '}
          <code>docker run --env-file</code>; in a shell, <code>set -a; . ./z4j.env; set +a</code>).
        </li>
        <li>
          Start the workers through the <code>celery</code> command, e.g. <code>celery -A yourapp worker</code>: the agent starts
          inside each worker and connects (<code>python -m celery</code> is not recognised).
        </li>
      </ol>
      {plainHttp && (
        <p class="notice warn">
          This page is served over plain http://, which z4j agents accept only in their development mode (a WebSocket to a
          loopback address excepted). Serve svc over https for real workers: <code>SVC_TLS_CERT_FILE</code> and{' '}
          <code>SVC_TLS_KEY_FILE</code>, or <code>SVC_TLS_SELF_SIGNED=true</code>.
        </p>
      )}
      {transport === 'longpoll' && (
        <p class="hint">
          z4j 1.6 agents need the project's id in <code>Z4J_PROJECT_ID</code> on long-poll: <code>{project.id}</code>.
        </p>
      )}
      <p role="status" data-testid="minted-agent-state">
        Status: <AgentState state={props.state} />
        {props.state !== 'online' && <span class="muted"> — this page notices when it connects.</span>}
      </p>
      <div class="actions">
        <button type="button" class="secondary" onClick={props.onDone}>
          Done: hide the secrets
        </button>
      </div>
    </Section>
  );
}
