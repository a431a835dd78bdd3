import { PageHeader } from '../ui/bits.tsx';

export function NotFoundPage() {
  return (
    <>
      <PageHeader title="Page not found" />
      <p>
        There is nothing at this address. Go to <a href="/projects">your projects</a> or the <a href="/activity">activity feed</a>
        .
      </p>
    </>
  );
}
