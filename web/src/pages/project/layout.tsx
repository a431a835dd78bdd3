// /projects/:slug/…: finds the project and renders the section its path names.
import { useLocation, useRoute } from 'preact-iso';
import { exec } from 'preact-iso/router';
import { api } from '../../api/client.ts';
import type { Project } from '../../api/types.ts';
import { useResource } from '../../lib/use-resource.ts';
import { loadProjects, projects } from '../../session.ts';
import { Badge, Loaded, PageHeader } from '../../ui/bits.tsx';
import { NotFoundPage } from '../not-found.tsx';
import { PROJECT_SECTIONS, type ProjectSection } from './sections.ts';

export const LAST_PROJECT = 'svc.project';

interface Matched {
  section: ProjectSection;
  params: Record<string, string>;
}

function ProjectPage(props: { project: Project; matched: Matched; reloadProject: () => Promise<void> }) {
  const { project: p, matched } = props;
  const Page = matched.section.component;
  localStorage.setItem(LAST_PROJECT, p.slug);
  const part = matched.section.title ?? matched.section.label ?? '';
  return (
    <>
      <PageHeader
        title={matched.section.path ? `${p.name}: ${part}` : p.name}
        lead={
          <>
            <code>{p.slug}</code> · your role <Badge tone="info">{p.role}</Badge>
            {!p.is_active && <Badge tone="warn">archived</Badge>}
          </>
        }
      />
      <Page project={p} params={matched.params} reloadProject={props.reloadProject} />
    </>
  );
}

/** A project outside the sidebar's list (an archived one an administrator opens by its address). */
function FetchedProject(props: { slug: string; matched: Matched }) {
  const project = useResource(() => api.get<Project>(`/projects/${encodeURIComponent(props.slug)}`), [props.slug]);
  return (
    <Loaded resource={project}>{(p) => <ProjectPage project={p} matched={props.matched} reloadProject={project.reload} />}</Loaded>
  );
}

export function ProjectLayout() {
  const { params } = useRoute();
  const { path } = useLocation();
  const slug = params.slug ?? '';
  // The rest of the path as the browser has it (not the router's decoded `rest`): a task id with an encoded
  // `/` or `%` stays one segment and is decoded once, by exec.
  const rest = path.replace(/^\/projects\/[^/]+/, '') || '/';
  const found = PROJECT_SECTIONS.map((s) => ({ section: s, m: exec(rest, `/${s.path}`) })).find((x) => x.m);
  if (!found) return <NotFoundPage />;
  const matched = { section: found.section, params: found.m!.params };
  // The projects the user can open are in the sidebar's list already: the page renders from it at once (no
  // request in the way), and reloading refreshes that list, so a rename shows in the switcher too.
  const listed = projects.value.find((p) => p.slug === slug);
  if (listed) return <ProjectPage project={listed} matched={matched} reloadProject={loadProjects} />;
  return <FetchedProject slug={slug} matched={matched} />;
}
