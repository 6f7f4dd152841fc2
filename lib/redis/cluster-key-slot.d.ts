/** Types of the `cluster-key-slot` package (ioredis's own slot function, which ships none). */
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot (0..16383) of a key, honouring `{hash tags}`. */
  export default function calculateSlot(key: string | Buffer): number;
}
