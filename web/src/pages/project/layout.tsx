// /projects/:slug/…: loads the project once and renders the section its path names.
import { useRoute } from 'preact-iso';
import { exec } from 'preact-iso/router';
import { api } from '../../api/client.ts';
import type { Project } from '../../api/types.ts';
import { useResource } from '../../lib/use-resource.ts';
import { Badge, Loaded, PageHeader } from '../../ui/bits.tsx';
import { NotFoundPage } from '../not-found.tsx';
import { PROJECT_SECTIONS } from './sections.ts';

export const LAST_PROJECT = 'svc.project';

export function ProjectLayout() {
  const { params } = useRoute();
  const slug = params.slug ?? '';
  const rest = `/${params.rest ?? ''}`;
  const project = useResource(() => api.get<Project>(`/projects/${encodeURIComponent(slug)}`), [slug]);
  const match = PROJECT_SECTIONS.map((s) => ({ s, m: exec(rest, `/${s.path}`) })).find((x) => x.m);
  if (!match) return <NotFoundPage />;
  const Page = match.s.component;
  return (
    <Loaded resource={project}>
      {(p) => {
        localStorage.setItem(LAST_PROJECT, p.slug);
        return (
          <>
            <PageHeader
              title={match.s.path ? `${p.name}: ${match.s.label ?? ''}` : p.name}
              lead={
                <>
                  <code>{p.slug}</code> · your role <Badge tone="info">{p.role}</Badge>
                  {!p.is_active && <Badge tone="warn">archived</Badge>}
                </>
              }
            />
            <Page project={p} params={match.m!.params} reloadProject={project.reload} />
          </>
        );
      }}
    </Loaded>
  );
}
