// Building blocks for setting declarations. A setting is a TypeBox schema
// (type, default, range) plus what the loader and `svc config show` need to
// know about it: whether it is secret, whether first boot mints it, and a
// one-line description for docs/configuration.md.
import { Type, type TLiteral, type TSchema, type TUnion } from '@sinclair/typebox';

export interface SettingMeta {
  description: string;
  /** Masked by `svc config show` and `/admin/settings`; refused in config.env. */
  secret?: boolean;
  /** Minted into the home directory's secret file on first boot when unset. */
  minted?: boolean;
  /** For secrets: minimum length in UTF-8 bytes. */
  minBytes?: number;
  /** Comma-separated list values: each entry must have at least this many UTF-8 bytes. */
  itemMinBytes?: number;
}

export interface Setting<S extends TSchema = TSchema> {
  schema: S;
  meta: SettingMeta;
}

const def = <S extends TSchema>(schema: S, meta: SettingMeta): Setting<S> => ({ schema, meta });

export const str = (meta: SettingMeta & { default?: string; maxLength?: number; pattern?: string }) =>
  def(
    Type.String({
      default: meta.default ?? '',
      ...(meta.maxLength !== undefined ? { maxLength: meta.maxLength } : {}),
      ...(meta.pattern !== undefined ? { pattern: meta.pattern } : {}),
    }),
    meta,
  );

export const int = (meta: SettingMeta & { default: number; min: number; max: number }) =>
  def(Type.Integer({ default: meta.default, minimum: meta.min, maximum: meta.max }), meta);

export const num = (meta: SettingMeta & { default: number; min: number; max: number }) =>
  def(Type.Number({ default: meta.default, minimum: meta.min, maximum: meta.max }), meta);

export const bool = (meta: SettingMeta & { default: boolean }) => def(Type.Boolean({ default: meta.default }), meta);

export const oneOf = <const V extends readonly [string, ...string[]]>(values: V, meta: SettingMeta & { default: V[number] }) =>
  def(Type.Union(values.map((v) => Type.Literal(v)), { default: meta.default }) as unknown as TUnion<TLiteral<V[number]>[]>, meta);

/** A comma-separated list in the environment; an array once loaded. */
export const list = (meta: SettingMeta & { maxItems?: number }) =>
  def(Type.Array(Type.String({ minLength: 1 }), { default: [], maxItems: meta.maxItems ?? 1024 }), meta);
