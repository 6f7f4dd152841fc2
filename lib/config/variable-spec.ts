/**
 * The JSON-schema fragment of one variable of lib/config/variables.ts (docs/style.md §5); `description` feeds the table
 * of docs/configuration.md.
 */
export interface VariableSpec {
  type: 'string' | 'integer' | 'number' | 'boolean';
  default?: string | number | boolean;
  minimum?: number;
  maximum?: number;
  enum?: readonly string[];
  minLength?: number;
  pattern?: string;
  description: string;
}
